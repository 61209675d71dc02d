"""Results: what an attempt's outcome means for the job, and writing many at once.

`decide` is pure (2xx → succeeded; anything else → retry with backoff, or dead
at max_attempts). `record_results` writes a batch in one short transaction of
raw SQL (through the ORM the same writes cost ~17x the CPU), every row behind
its own fence: status='running' AND worker_id=? AND attempt=?.
"""

from __future__ import annotations

import enum
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from jobs.queue_lifecycle import REASON_AUTO_PAUSED, cancel_task_jobs
from jobs.sql import QUERIES, expand
from tasks import health

from .backoff import MAX_BACKOFF_SECONDS, RETRY_AFTER_STATUSES, is_last_attempt, retry_delay_seconds

logger = logging.getLogger(__name__)

MAX_ERROR_LENGTH = 1024  # jobs.error is VARCHAR(1024)
RESULT_COLUMNS = ("id", "attempt", "status", "http_status", "error", "response_body", "delay_seconds")


class Outcome(enum.StrEnum):
    SUCCEEDED = "succeeded"
    RETRY = "pending"
    DEAD = "dead"


@dataclass(frozen=True, slots=True)
class JobResult:
    job_id: uuid.UUID
    attempt: int
    outcome: Outcome
    http_status: int | None = None
    error: str | None = None
    response_body: str | None = None
    delay_seconds: int | None = None  # set for RETRY only


@dataclass
class WriteReport:
    written: list[JobResult] = field(default_factory=list)
    dropped: list[JobResult] = field(default_factory=list)
    paused_tasks: list[tuple[str, uuid.UUID]] = field(default_factory=list)  # (tenant, task) auto-paused


_LAST_RUN_OUTCOME = {Outcome.SUCCEEDED: health.SUCCEEDED, Outcome.RETRY: health.RETRYING, Outcome.DEAD: health.DEAD}
TASK_HEALTH_COLUMNS = (
    "id",
    "consecutive_failures",
    "job_id",
    "scheduled_at",
    "outcome",
    "http_status",
    "pause",
    "paused_reason",
)


def _update_task_health(
    cursor: Any, written: list[JobResult], locked: dict[uuid.UUID, tuple]
) -> list[tuple[str, uuid.UUID]]:
    """One UPDATE of the written results' tasks (last run, dead jobs in a row, auto-pause); the tasks it paused."""
    attempts: dict[bytes, list[health.Attempt]] = {}
    tenants: dict[bytes, str] = {}
    for result in written:
        _, _, task_id, scheduled_at, tenant_id = locked[result.job_id]
        tenants[bytes(task_id)] = tenant_id
        attempts.setdefault(bytes(task_id), []).append(
            health.Attempt(result.job_id.bytes, scheduled_at, _LAST_RUN_OUTCOME[result.outcome], result.http_status)
        )
    task_ids = sorted(attempts)
    cursor.execute(expand(QUERIES["result_lock_tasks"], len(task_ids), 1, marker="ids"), task_ids)
    rows: list[Any] = []
    paused = []
    count = 0
    for task_id, status, failures, auto_pause_after in cursor.fetchall():
        task_id = bytes(task_id)
        state = health.next_health(
            status=status,
            consecutive_failures=failures,
            auto_pause_after=auto_pause_after,
            default_auto_pause_after=settings.AUTO_PAUSE_AFTER_DEAD_JOBS,
            attempts=attempts[task_id],
        )
        last = state.last
        rows += [task_id, state.consecutive_failures, last.job_id, last.scheduled_at, last.outcome, last.http_status]
        rows += [state.pause, state.paused_reason]
        count += 1
        if state.pause:
            paused.append((tenants[task_id], uuid.UUID(bytes=task_id)))
    if count:  # jobs without a task row (tests, benches) have nothing to update
        query = QUERIES["result_update_tasks"].replace("{tasks}", _derived_table(TASK_HEALTH_COLUMNS, count))
        cursor.execute(query, rows)
    return paused


def _derived_table(columns: tuple[str, ...], count: int) -> str:
    """`SELECT %s AS a, %s AS b UNION ALL SELECT %s, %s ...` for `count` rows."""
    first = "SELECT " + ", ".join(f"%s AS {name}" for name in columns)
    rest = " UNION ALL SELECT " + ", ".join(["%s"] * len(columns))
    return first + rest * (count - 1)


def decide(
    *,
    job_id: uuid.UUID,
    attempt: int,
    max_attempts: int,
    backoff_base_seconds: int,
    http_status: int | None,
    error: str | None = None,
    response_body: str | None = None,
    retry_after_seconds: int | None = None,
) -> JobResult:
    """The job's next state after this attempt (3xx counts as a failure: no redirects).

    A 429 or 503 carrying Retry-After is retried when the receiver asked (bounded by the
    one-day backoff cap), not on our own backoff.
    """
    if error is None and http_status is not None and 200 <= http_status < 300:
        return JobResult(job_id, attempt, Outcome.SUCCEEDED, http_status, None, response_body)
    if error is None:
        error = f"HTTP {http_status}"
    error = error[:MAX_ERROR_LENGTH]
    if is_last_attempt(attempt=attempt, max_attempts=max_attempts):
        return JobResult(job_id, attempt, Outcome.DEAD, http_status, error, response_body)
    if http_status in RETRY_AFTER_STATUSES and retry_after_seconds is not None:
        delay = min(retry_after_seconds, MAX_BACKOFF_SECONDS)
    else:
        delay = retry_delay_seconds(attempt=attempt, backoff_base_seconds=backoff_base_seconds)
    return JobResult(job_id, attempt, Outcome.RETRY, http_status, error, response_body, delay)


def _results_table(count: int) -> str:
    """A derived table of `count` result rows: `SELECT %s AS id, ... UNION ALL SELECT %s, ...`."""
    first = "SELECT " + ", ".join(f"%s AS {name}" for name in RESULT_COLUMNS)
    rest = " UNION ALL SELECT " + ", ".join(["%s"] * len(RESULT_COLUMNS))
    return first + rest * (count - 1)


def record_results(*, worker_id: str, results: list[JobResult]) -> WriteReport:
    """Write `results` behind their fences; the report says which were dropped.

    A dropped result is one whose claim is no longer ours: the reconciler took
    the job back after the lease expired, or another claim (even by this same
    worker id) holds it with a newer attempt. Dropping it is correct: the row's
    current state belongs to whoever holds it now.
    """
    report = WriteReport()
    if not results:
        return report
    ids = [job_id.bytes for job_id in dict.fromkeys(result.job_id for result in results)]
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        cursor.execute(expand(QUERIES["result_lock_fenced"], len(ids), 1, marker="ids"), [worker_id, *ids])
        locked = {uuid.UUID(bytes=bytes(row[0])): row for row in cursor.fetchall()}
        fenced = {job_id: row[1] for job_id, row in locked.items()}
        for result in results:
            # attempt is the fencing token: a row held under another attempt is not ours. A batch can
            # hold two results for one job (an old claim's, late, and the re-claim's): only the
            # current attempt's is written, once; pop so no other result can match that row.
            if fenced.get(result.job_id) == result.attempt:
                fenced.pop(result.job_id)
                report.written.append(result)
            else:
                report.dropped.append(result)
        if report.written:
            # Before the jobs' write, which reads the tasks' status: an auto-pause here cancels a retry there.
            report.paused_tasks = _update_task_health(cursor, report.written, locked)
            params: list[Any] = []
            for r in report.written:
                params += [
                    r.job_id.bytes,
                    r.attempt,
                    r.outcome.value,
                    r.http_status,
                    r.error,
                    r.response_body,
                    r.delay_seconds,
                ]
            query = QUERIES["result_write"].replace("{results}", _results_table(len(report.written)))
            cursor.execute(query, (*params, worker_id))
            # The fenced rows are locked by this transaction, so each one must change.
            if cursor.rowcount != len(report.written):
                raise RuntimeError(f"result write changed {cursor.rowcount} of {len(report.written)} locked rows")
            for tenant_id, task_id in report.paused_tasks:
                # An auto-pause is a pause: the task's other pending jobs leave the queue with it.
                cancel_task_jobs(tenant_id=tenant_id, task_id=task_id, deleted=False, reason=REASON_AUTO_PAUSED)
    for tenant_id, task_id in report.paused_tasks:
        logger.warning(
            "task paused automatically",
            extra={"event": "task_auto_paused", "task_id": str(task_id), "tenant_id": tenant_id},
        )
    for result in report.dropped:
        logger.warning(
            "result dropped by the fence",
            extra={
                "event": "result_dropped",
                "job_id": str(result.job_id),
                "attempt": result.attempt,
                "outcome": result.outcome.value,
                "worker_id": worker_id,
            },
        )
    return report
