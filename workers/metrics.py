"""The worker loops' Prometheus metrics, in one module so names and labels are defined once.

Each worker process exports its own (workers/health.py serves them on
`--metrics-port`); sum or max them across replicas in PromQL. Every label has a
fixed, small set of values: the loop's name, an outcome, a status, or (only with
METRICS_TENANT_LABELS: /metrics has no authentication) one of at most
DEAD_TENANTS_TOP tenants plus "other" (queue_stats.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LOOP_ITERATIONS = Counter("jobsched_loop_iterations_total", "Loop iterations completed (or failed), by loop.", ["loop"])
LOOP_LAST_ITERATION = Gauge(
    "jobsched_loop_last_iteration_timestamp_seconds", "Unix time of the loop's last iteration.", ["loop"]
)
DB_ERRORS = Counter("jobsched_db_errors_total", "Iterations that failed because the database was away.", ["loop"])
METRICS_CONNECTIONS_REFUSED = Counter(
    "jobsched_metrics_connections_refused_total",
    "Connections to --metrics-port closed at once because WORKER_METRICS_MAX_CONNECTIONS were being served.",
)
DB_UNREACHABLE_SINCE = Gauge(
    "jobsched_db_unreachable_since_timestamp_seconds",
    "Unix time of the first failure of the current database outage; 0 while the database answers.",
    ["loop"],
)

# --- scheduler
SCHEDULER_TICK_SECONDS = Histogram(
    "jobsched_scheduler_tick_duration_seconds",
    "Duration of one scheduler tick (one transaction), idle ticks included.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
SCHEDULER_LAG_SECONDS = Gauge(
    "jobsched_scheduler_lag_seconds",
    "Database now minus the oldest next_run_at of the last tick that found tasks (negative inside the lookahead).",
)
SCHEDULER_RUNS = Counter("jobsched_scheduler_runs_total", "Task runs scheduled (each has its job after the tick).")

# --- executor
EXECUTOR_CLAIMED = Counter("jobsched_executor_claimed_total", "Jobs claimed (attempt counted, committed).")
EXECUTOR_FIRED = Counter("jobsched_executor_fired_total", "Calls started at their second.")
EXECUTOR_RESULTS = Counter(
    "jobsched_executor_results_total", "Results written behind their fence, by outcome.", ["outcome"]
)
EXECUTOR_FENCE_DROPS = Counter(
    "jobsched_executor_fence_drops_total", "Results dropped because the claim was no longer this attempt's."
)
EXECUTOR_LATENESS = Histogram(
    "jobsched_executor_lateness_seconds",
    "Fire time minus scheduled_at, on the database clock (retries count from their scheduled run).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0),
)
EXECUTOR_HELD = Gauge(
    "jobsched_executor_held_jobs", "Claimed jobs not yet answered (parked, waiting for a call slot, or in flight)."
)
EXECUTOR_RELEASED = Counter(
    "jobsched_executor_released_total",
    "Claims given back without a call (waited too long for a call slot, or a shutdown's grace ended).",
)

# --- reconciler and archiver
RECONCILER_RETURNED = Counter("jobsched_reconciler_returned_total", "Jobs whose lease expired, returned to the queue.")
ARCHIVER_MOVED = Counter(
    "jobsched_archiver_moved_total", "Jobs written to the history store and deleted from MySQL, by status.", ["status"]
)
ARCHIVER_KEPT = Counter("jobsched_archiver_kept_total", "Jobs read for archiving but changed since (kept in MySQL).")
ARCHIVER_PURGED = Counter("jobsched_archiver_purged_total", "Expired history rows purged (SQL history store).")
ARCHIVER_RUN_REQUESTS_PURGED = Counter(
    "jobsched_archiver_run_requests_purged_total", "Run-now Idempotency-Keys purged past their retention."
)
ARCHIVER_TASK_CHANGES_PURGED = Counter(
    "jobsched_archiver_task_changes_purged_total", "Audit records of task changes purged past AUDIT_RETENTION_DAYS."
)
ARCHIVER_FAILURES = Counter("jobsched_archiver_failures_total", "Steps in which the history store failed.")


# --- the queue, as seen by the one elected replica (workers/queue_stats.py)
@dataclass(frozen=True)
class QueueGauges:
    """One report of the queue gauges, published whole: a scrape sees one report or the next, never a mix."""

    reporting: bool = False  # False: another replica reports; the figures below are empty or 0
    jobs: Mapping[str, int] = field(default_factory=dict)  # by status, counted up to a cap
    oldest_due_pending_seconds: float = 0.0
    expired_leases: int = 0
    dead_by_tenant: Mapping[str, int] | None = None  # None: not exported (METRICS_TENANT_LABELS off)


class QueueGaugesCollector(Collector):
    """The queue gauges, read from the last published `QueueGauges` (one reference, swapped whole)."""

    def __init__(self) -> None:
        self.gauges = QueueGauges()

    def publish(self, gauges: QueueGauges) -> None:
        self.gauges = gauges  # one attribute write: atomic for a scrape on another thread

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return self._families(QueueGauges(dead_by_tenant={}))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self._families(self.gauges)

    @staticmethod
    def _families(gauges: QueueGauges) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily(
            "jobsched_queue_jobs", "Jobs in MySQL by status (counted up to a cap).", labels=["status"]
        )
        for status, count in gauges.jobs.items():
            jobs.add_metric([status], count)
        yield jobs
        yield GaugeMetricFamily(
            "jobsched_queue_oldest_due_pending_seconds",
            "Age of the oldest pending job that is due (0 when none is).",
            value=gauges.oldest_due_pending_seconds,
        )
        yield GaugeMetricFamily(
            "jobsched_queue_expired_leases",
            "Running jobs whose lease has expired (not yet returned).",
            value=gauges.expired_leases,
        )
        if gauges.dead_by_tenant is not None:
            dead = GaugeMetricFamily(
                "jobsched_dead_jobs",
                "Dead jobs in MySQL by tenant: the top tenants by count, the rest as '~other' (METRICS_TENANT_LABELS).",
                labels=["tenant"],
            )
            for tenant, count in gauges.dead_by_tenant.items():
                dead.add_metric([tenant], count)
            yield dead
        yield GaugeMetricFamily(
            "jobsched_queue_stats_reporter",
            "1 on the replica that holds the stats lock and reports the queue gauges.",
            value=1 if gauges.reporting else 0,
        )


QUEUE_GAUGES = QueueGaugesCollector()
REGISTRY.register(QUEUE_GAUGES)
