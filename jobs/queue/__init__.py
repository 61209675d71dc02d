"""The queue: every statement on `jobs` runs from this package, nowhere else.

The SQL is in jobs/sql/*.sql (named blocks, named parameters), the row mappers
sit beside the statements, and callers ask for what they need:

- executor: `claim_due`, `release_claims` (a prefetched job never called), `record_results` (claims.py,
  results.py); rate limits per origin, kept inside the claim, and `block_origins` (Retry-After) (pacing.py)
- scheduler: `schedule_due_tasks`, `max_allowed_packet` (scheduling.py)
- reconciler: `sweep_expired_leases` (leases.py)
- task health, written by both the result write and the sweep: `task_health.update_task_health` (task_health.py)
- archiver: `finished_jobs`, `delete_archived` (archive.py)
- task lifecycle: `cancel_task_jobs` (pause, delete, auto-pause), `insert_run_now_job`, and run now's
  Idempotency-Keys (`run_requests`): `run_request_job`, `bind_run_request`, `purge_expired_run_requests`
  (the archiver's) (lifecycle.py)
- the queue's gauges for /metrics: `stats.holds_stats_lock`, `stats.queue_figures`
  (stats.py, imported as a module: only the reconciler's stats reader uses it)
- manual retry, cancel, discard and the DLQ summary: `requeue_dead_jobs` (the one retry statement),
  `requeue_dead_job` and `requeue_dead_jobs_staggered` (the console's bulk retry) on it, `cancel_pending_job`,
  `discard_dead_job`, `job_status`, `jobs_status`, `dead_jobs_by_tenant` (support.py)
- tenants' notifications: `notifications.emit_after_attempts` (the result write's and the sweep's),
  `notifications.task_completed` and `notifications.emit` (the scheduler's), `notifications.purge_expired_events`
  (the archiver's) (notifications.py, imported as a module)
- backfill (jobs.backfill): `backfill_existing_runs`, `insert_backfill_jobs` (backfill.py)
- the admin's queue dashboard: `jobs.queue.dashboard.read_dashboard` (dashboard.py, bounded reads)

Reads through the ORM (the job API, the admin lists) stay with their callers:
they change nothing and need no SQL of their own.
"""

from jobs.queue.archive import delete_archived, finished_jobs
from jobs.queue.backfill import backfill_existing_runs, insert_backfill_jobs
from jobs.queue.claims import ClaimedJob, claim_due, due_priorities, release_claims
from jobs.queue.leases import sweep_expired_leases
from jobs.queue.lifecycle import (
    bind_run_request,
    cancel_task_jobs,
    insert_run_now_job,
    purge_expired_run_requests,
    run_request_job,
)
from jobs.queue.pacing import OriginBlock, block_origins
from jobs.queue.results import RESULT_COLUMNS, JobResult, Outcome, WriteReport, record_results
from jobs.queue.scheduling import DueTask, max_allowed_packet, schedule_due_tasks
from jobs.queue.support import (
    DeadCounts,
    TenantDead,
    cancel_pending_job,
    dead_jobs_by_tenant,
    discard_dead_job,
    job_status,
    jobs_status,
    requeue_dead_job,
    requeue_dead_jobs,
    requeue_dead_jobs_staggered,
)

__all__ = [
    "RESULT_COLUMNS",
    "ClaimedJob",
    "DeadCounts",
    "DueTask",
    "JobResult",
    "OriginBlock",
    "Outcome",
    "TenantDead",
    "WriteReport",
    "backfill_existing_runs",
    "bind_run_request",
    "block_origins",
    "cancel_pending_job",
    "cancel_task_jobs",
    "claim_due",
    "dead_jobs_by_tenant",
    "delete_archived",
    "discard_dead_job",
    "due_priorities",
    "finished_jobs",
    "insert_backfill_jobs",
    "insert_run_now_job",
    "job_status",
    "jobs_status",
    "max_allowed_packet",
    "purge_expired_run_requests",
    "record_results",
    "release_claims",
    "requeue_dead_job",
    "requeue_dead_jobs",
    "requeue_dead_jobs_staggered",
    "run_request_job",
    "schedule_due_tasks",
    "sweep_expired_leases",
]
