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

from django.db import connection, transaction

from jobs.sql import QUERIES, expand

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
        fenced = {uuid.UUID(bytes=bytes(job_id)): attempt for job_id, attempt in cursor.fetchall()}
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
