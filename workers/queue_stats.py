"""The queue's gauges (depth by status, oldest due pending age, expired leases, dead jobs by
tenant), read by one replica of the reconciler every interval.

Reading them in every replica of every loop would multiply the cost by the
replicas for the same figures. The reconciler runs them (it already sweeps the
queue on a timer), and among its replicas only the one holding a MySQL named
lock does (`stats_lock`): the others clear these gauges, so a sum or max over
pods counts each figure once. Failover is the lock's: it goes with its session.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from jobs.queue import stats
from workers.metrics import DEAD_JOBS, QUEUE_EXPIRED_LEASES, QUEUE_JOBS, QUEUE_OLDEST_DUE_SECONDS, QUEUE_STATS_REPORTER

logger = logging.getLogger(__name__)

LOCK_NAME = "jobsched.queue_stats"
STATUS_COUNT_CAP = 1_000_000  # the status counts stop here ("at least"), bounding each read
DEAD_SCAN_ROWS = 10_000
DEAD_TENANTS_TOP = 10  # label values: these tenants plus "other"
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
        if not elected():
            if self.reporting:
                logger.info("queue stats now reported by another replica", extra={"event": "stats_standby"})
            self.reporting = False
            for gauge in (QUEUE_JOBS, DEAD_JOBS):
                gauge.clear()
            for single in (QUEUE_OLDEST_DUE_SECONDS, QUEUE_EXPIRED_LEASES):
                single.set(0)
            QUEUE_STATS_REPORTER.set(0)
            return False
        figures = read_queue_figures()
        for status in ("pending", "running", "succeeded", "dead"):
            QUEUE_JOBS.labels(status).set(figures[status])
        QUEUE_EXPIRED_LEASES.set(figures["expired_leases"])
        QUEUE_OLDEST_DUE_SECONDS.set(figures["oldest_due_pending_ms"] / 1000)
        DEAD_JOBS.clear()  # a tenant that left the top N must not keep its last value
        for tenant, dead in read_dead_by_tenant().items():
            DEAD_JOBS.labels(tenant).set(dead)
        QUEUE_STATS_REPORTER.set(1)
        self.reporting = True
        return True


def elected() -> bool:
    return stats.holds_stats_lock(name=LOCK_NAME)


def read_queue_figures(*, cap: int = STATUS_COUNT_CAP) -> dict[str, int]:
    return stats.queue_figures(cap=cap)


def read_dead_by_tenant(*, scan: int = DEAD_SCAN_ROWS, tenants: int = DEAD_TENANTS_TOP) -> dict[str, int]:
    """The top tenants' dead jobs and the rest as "other" (0 when there is no rest)."""
    dead = stats.dead_by_tenant(scan=scan, tenants=tenants)
    return {**dead.top, OTHER_TENANTS: dead.scanned - sum(dead.top.values())}
