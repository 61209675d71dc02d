"""Writing many results at once, every row behind its own fence.

One short transaction of raw SQL (through the ORM the same writes cost ~17x the
CPU): lock the rows that still carry our claim, lock their tasks and write how
each is doing (`jobs.queue.task_health`, shared with the reconciler's sweep: one
UPDATE per batch of last run, dead jobs in a row, auto-pause), then one
UPDATE ... JOIN of the results, sent as one JSON document. The fence is
status='running' AND worker_id AND fence. What a result *is* (succeeded, retry, dead) is decided by the executor
(`workers.executor.results.decide`); this module only writes it.
"""

from __future__ import annotations

import enum
import logging
import uuid
from dataclasses import dataclass, field

from django.db import connection, transaction

from jobs.queue import notifications, task_health
from jobs.queue.statements import STATEMENTS
from tasks import run_health

logger = logging.getLogger(__name__)


class Outcome(enum.StrEnum):
    """The job's status after the attempt (a retry is pending again)."""

    SUCCEEDED = "succeeded"
    RETRY = "pending"
    DEAD = "dead"


@dataclass(slots=True)  # not frozen: its __init__ would set each field through object.__setattr__ (2x, per job)
class JobResult:
    job_id: uuid.UUID
    fence: int  # the claim's fencing token (ClaimedJob.fence)
    attempt: int  # the call this result is of (the attempt log's entry)
    outcome: Outcome
    http_status: int | None = None
    error: str | None = None
    response_body: str | None = None
    delay_seconds: int | None = None  # set for RETRY only
    duration_ms: int | None = None  # how long the call took (the attempt log's duration)


# The JSON document `result_write` reads: one row per written result.
RESULT_COLUMNS = (
    "id",
    "fence",
    "attempt",
    "status",
    "http_status",
    "error",
    "response_body",
    "delay_seconds",
    "duration_ms",
)


def _result_row(result: JobResult) -> tuple:
    return (
        result.job_id.bytes,
        result.fence,
        result.attempt,
        result.outcome.value,
        result.http_status,
        result.error,
        result.response_body,
        result.delay_seconds,
        result.duration_ms,
    )


@dataclass
class WriteReport:
    written: list[JobResult] = field(default_factory=list)
    dropped: list[JobResult] = field(default_factory=list)
    paused_tasks: list[tuple[str, uuid.UUID]] = field(default_factory=list)  # (tenant, task) auto-paused


_LAST_RUN_OUTCOME = {
    Outcome.SUCCEEDED: run_health.SUCCEEDED,
    Outcome.RETRY: run_health.RETRYING,
    Outcome.DEAD: run_health.DEAD,
}


def _task_attempts(written: list[JobResult], locked: dict[bytes, tuple]) -> list[task_health.TaskAttempt]:
    """The written results as their tasks' attempts, in batch order (the task health write's rows)."""
    attempts = []
    for result in written:
        job_id = result.job_id.bytes
        _, _, task_id, scheduled_at, tenant_id = locked[job_id]
        outcome = _LAST_RUN_OUTCOME[result.outcome]
        attempt = run_health.Attempt(job_id, scheduled_at, outcome, result.http_status)
        attempts.append((bytes(task_id), tenant_id, attempt))
    return attempts


def _death(result: JobResult, locked: dict[bytes, tuple]) -> notifications.Death:
    _, _, task_id, _, tenant_id = locked[result.job_id.bytes]
    return notifications.Death(
        tenant_id, bytes(task_id), result.job_id.bytes, result.attempt, result.http_status, result.error
    )


def record_results(*, worker_id: str, results: list[JobResult]) -> WriteReport:
    """Write `results` behind their fences; the report says which were dropped.

    A dropped result is one whose claim is no longer ours: the reconciler took
    the job back after the lease expired, or another claim (even by this same
    worker id) holds it with a newer fence, or it was given back. Dropping it is correct: the row's
    current state belongs to whoever holds it now.
    """
    report = WriteReport()
    if not results:
        return report
    ids = [(job_id.bytes,) for job_id in dict.fromkeys(result.job_id for result in results)]
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        # Rendered with our literals (statements.literal): the driver's quoting was the batch's hottest Python.
        db = connection.connection
        cursor.execute(STATEMENTS["result_lock_fenced"].render(db, {"worker_id": worker_id}, ids))
        # Keyed by the id's bytes, as read: no UUID built per row.
        locked = {bytes(row[0]): row for row in cursor.fetchall()}
        fenced = {job_id: row[1] for job_id, row in locked.items()}
        for result in results:
            # fence is the fencing token: a row held under another fence is not ours. A batch can
            # hold two results for one job (an old claim's, late, and the re-claim's): only the
            # current holding's is written, once; pop so no other result can match that row.
            job_id = result.job_id.bytes
            if fenced.get(job_id) == result.fence:
                fenced.pop(job_id)
                report.written.append(result)
            else:
                report.dropped.append(result)
        if report.written:
            attempts = _task_attempts(report.written, locked)
            prior: dict[bytes, tuple[str, int]] = {}
            # Before the jobs' write, which reads the tasks' status: an auto-pause here cancels a retry there.
            report.paused_tasks = task_health.update_task_health(cursor, attempts, prior=prior)
            rows = [_result_row(result) for result in report.written]
            statement = STATEMENTS["result_write"]
            cursor.execute(statement.render(db, {"worker_id": worker_id}, rows, columns=RESULT_COLUMNS))
            # The fenced rows are locked by this transaction, so each one must change.
            if cursor.rowcount != len(report.written):
                raise RuntimeError(f"result write changed {cursor.rowcount} of {len(report.written)} locked rows")
            task_health.cancel_auto_paused(report.paused_tasks)
            # The tenants' notifications of this write's deaths, committed with them (none without a dead job).
            deaths = [_death(result, locked) for result in report.written if result.outcome is Outcome.DEAD]
            if deaths:
                notifications.emit_after_attempts(
                    cursor, deaths=deaths, attempts=attempts, prior=prior, paused=report.paused_tasks
                )
    task_health.log_auto_paused(report.paused_tasks)
    for result in report.dropped:
        logger.warning(
            "result dropped by the fence",
            extra={
                "event": "result_dropped",
                "job_id": str(result.job_id),
                "attempt": result.attempt,
                "fence": result.fence,
                "outcome": result.outcome.value,
                "worker_id": worker_id,
            },
        )
    return report
