"""The reconciler: return jobs whose lease expired to the queue (or the DLQ at the limit).

The other half of the lease: an executor that died or hung leaves its jobs
'running'; once `lease_expires_at` (the job's time + timeout + 30 s) has passed,
one short transaction per sweep (`jobs.queue.sweep_expired_leases`) takes them back and
keeps their tasks' health as the result write does (last run, dead jobs in a row,
auto-pause). It never adds an attempt: the claim counted it already.
"""

from __future__ import annotations

import logging

from jobs import queue
from workers.metrics import RECONCILER_RETURNED

logger = logging.getLogger(__name__)

DEFAULT_SWEEP_LIMIT = 1000


def reconcile_step(*, limit: int = DEFAULT_SWEEP_LIMIT, max_sweeps: int = 100) -> bool:
    """Sweep while each sweep fills the limit; True (busy) when the last one was full."""
    returned: list[int] = []
    while len(returned) < max_sweeps and (not returned or returned[-1] >= limit):
        returned.append(queue.sweep_expired_leases(limit=limit))
        RECONCILER_RETURNED.inc(returned[-1])
    if any(returned):
        logger.info(
            "expired leases returned",
            extra={"event": "reconcile", "jobs": sum(returned), "sweeps": len(returned), "per_sweep": returned},
        )
    return returned[-1] >= limit
