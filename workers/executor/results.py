"""Results: what an attempt's outcome means for the job.

`decide` is pure (2xx → succeeded; anything else → retry with backoff, or dead
at max_attempts). Writing them, behind the fence, is `jobs.queue.record_results`.
"""

from __future__ import annotations

import uuid

from jobs.queue import JobResult, Outcome

from .backoff import MAX_BACKOFF_SECONDS, RETRY_AFTER_STATUSES, is_last_attempt, retry_delay_seconds

MAX_ERROR_LENGTH = 1024  # jobs.error is VARCHAR(1024)


def decide(
    *,
    job_id: uuid.UUID,
    fence: int,
    attempt: int,
    max_attempts: int,
    backoff_base_seconds: int,
    http_status: int | None,
    error: str | None = None,
    response_body: str | None = None,
    duration_ms: int | None = None,
    retry_after_seconds: int | None = None,
) -> JobResult:
    """The job's next state after this attempt (3xx counts as a failure: no redirects).

    A 429 or 503 carrying Retry-After is retried when the receiver asked (bounded by the
    one-day backoff cap), not on our own backoff.
    """
    if error is None and http_status is not None and 200 <= http_status < 300:
        return JobResult(job_id, fence, attempt, Outcome.SUCCEEDED, http_status, None, response_body, None, duration_ms)
    if error is None:
        error = f"HTTP {http_status}"
    error = error[:MAX_ERROR_LENGTH]
    if is_last_attempt(attempt=attempt, max_attempts=max_attempts):
        return JobResult(job_id, fence, attempt, Outcome.DEAD, http_status, error, response_body, None, duration_ms)
    if http_status in RETRY_AFTER_STATUSES and retry_after_seconds is not None:
        delay = min(retry_after_seconds, MAX_BACKOFF_SECONDS)
    else:
        delay = retry_delay_seconds(attempt=attempt, backoff_base_seconds=backoff_base_seconds)
    return JobResult(job_id, fence, attempt, Outcome.RETRY, http_status, error, response_body, delay, duration_ms)
