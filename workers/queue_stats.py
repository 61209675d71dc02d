"""The queue's gauges (depth by status, oldest due pending age, expired leases, dead jobs by
tenant), read by one replica of the reconciler every interval.

Reading them in every replica of every loop would multiply the cost by the
replicas for the same figures. The reconciler runs them (it already sweeps the
queue on a timer), and among its replicas only the one holding a MySQL named
lock does (`stats_lock`): the others clear these gauges, so a sum or max over
pods counts each figure once. Failover is the lock's: it goes with its session.
Every figure comes from one statement (one snapshot) and is published as one
`QueueGauges`, so a scrape never sees the dead count of one moment beside the
dead jobs by tenant of another. Tenant ids are read and exported only with
METRICS_TENANT_LABELS (default off): /metrics has no authentication.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings

from jobs.queue import stats
from jobs.queue.stats import QueueFigures
from workers.metrics import QUEUE_GAUGES, QueueGauges

logger = logging.getLogger(__name__)

LOCK_NAME = "jobsched.queue_stats"
STATUS_COUNT_CAP = 1_000_000  # the status counts stop here ("at least"), bounding each read
DEAD_SCAN_ROWS = 10_000
DEAD_TENANTS_TOP = 10  # label values: these tenants plus "other" (only with METRICS_TENANT_LABELS)
OTHER_TENANTS = "~other"  # tenant ids are printable text: this one is unlikely, not impossible
DEFAULT_INTERVAL_SECONDS = 15.0


class QueueStats:
    """`maybe_report()` from a loop's step: at most once per interval, and only on the elected replica."""

    def __init__(
        self, *, interval_seconds: float = DEFAULT_INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval = interval_seconds
        self.clock = clock
        self._next_at = 0.0
        self.reporting = False

    def maybe_report(self) -> bool:
        """Report when the interval is up; True when this replica reported."""
        if self.clock() < self._next_at:
            return False
        self._next_at = self.clock() + self.interval
        return self.report()

    def report(self) -> bool:
        """Read every figure in one statement and publish them together (a scrape never sees a mix)."""
        if not elected():
            if self.reporting:
                logger.info("queue stats now reported by another replica", extra={"event": "stats_standby"})
            self.reporting = False
            QUEUE_GAUGES.publish(QueueGauges())  # empty: a sum or max over pods counts each figure once
            return False
        by_tenant = settings.METRICS_TENANT_LABELS
        figures = read_queue_figures(tenants=DEAD_TENANTS_TOP if by_tenant else 0)
        counts = figures.counts
        QUEUE_GAUGES.publish(
            QueueGauges(
                reporting=True,
                jobs={status: counts[status] for status in ("pending", "running", "succeeded", "dead")},
                oldest_due_pending_seconds=counts["oldest_due_pending_ms"] / 1000,
                expired_leases=counts["expired_leases"],
                dead_by_tenant=dead_by_tenant(figures) if by_tenant else None,
            )
        )
        self.reporting = True
        return True


def elected() -> bool:
    return stats.holds_stats_lock(name=LOCK_NAME)


def read_queue_figures(
    *, cap: int = STATUS_COUNT_CAP, scan: int = DEAD_SCAN_ROWS, tenants: int = DEAD_TENANTS_TOP
) -> QueueFigures:
    return stats.queue_figures(cap=cap, scan=scan, tenants=tenants)


def dead_by_tenant(figures: QueueFigures) -> dict[str, int]:
    """The top tenants' dead jobs and the rest as "other" (0 when there is no rest)."""
    return {**figures.dead_top, OTHER_TENANTS: figures.dead_scanned - sum(figures.dead_top.values())}
