"""Use cases on jobs that the API, the admin and the loops share."""

from __future__ import annotations

import enum
import logging
import uuid

from jobs import queue

logger = logging.getLogger(__name__)


class RetryOutcome(enum.Enum):
    REQUEUED = "requeued"  # 202: the dead job is pending again
    GONE = "gone"  # 404: archived, never existed, or another tenant's
    NOT_DEAD = "not_dead"  # 409: it exists but is pending, running or succeeded


def job_retry(*, job_id: uuid.UUID, tenant_id: str | None) -> RetryOutcome:
    """Put a dead job back in the queue: same id, same scheduled_at, fresh budget.

    `tenant_id=None` is support staff (any tenant). One guarded UPDATE on
    status='dead' decides; a second read only explains a miss.
    """
    if queue.requeue_dead_job(job_id=job_id, tenant_id=tenant_id):
        logger.info("job requeued", extra={"event": "job_retry", "job_id": str(job_id), "tenant_id": tenant_id})
        return RetryOutcome.REQUEUED
    # The guard missed: a concurrent retry, the archiver, or a job that is not dead.
    status = queue.job_status(job_id=job_id, tenant_id=tenant_id)
    outcome = RetryOutcome.GONE if status is None else RetryOutcome.NOT_DEAD
    logger.info(
        "job retry refused",
        extra={"event": "job_retry", "job_id": str(job_id), "tenant_id": tenant_id, "outcome": outcome.value},
    )
    return outcome
