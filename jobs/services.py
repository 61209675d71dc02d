"""Use cases on jobs that the API, the admin and the loops share."""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Sequence

from jobs import queue
from jobs.models import JobStatus
from tasks.models import TaskStatus

logger = logging.getLogger(__name__)


class RetryOutcome(enum.Enum):
    REQUEUED = "requeued"  # 202: the dead job is pending again
    GONE = "gone"  # 404: archived, never existed, or another tenant's
    NOT_DEAD = "not_dead"  # 409: it exists but is pending, running or succeeded
    CANCELLED = "cancelled"  # 409: cancelled (by a cancel, a discard, or its task's pause) before it could be
    TASK_PAUSED = "task_paused"  # 409: dead, but its task is paused: resume the task first
    TASK_DELETED = "task_deleted"  # 409: its task is deleted (its dead jobs were cancelled with it)


def job_retry(*, job_id: uuid.UUID, tenant_id: str | None) -> RetryOutcome:
    """Put a dead job back in the queue: same id, same scheduled_at, fresh budget.

    `tenant_id=None` is support staff (any tenant). One guarded UPDATE on
    status='dead' decides; a second read only explains a miss.
    """
    if queue.requeue_dead_job(job_id=job_id, tenant_id=tenant_id):
        logger.info("job requeued", extra={"event": "job_retry", "job_id": str(job_id), "tenant_id": tenant_id})
        return RetryOutcome.REQUEUED
    # The guard missed: a concurrent retry, the archiver, a job that is not dead, or a task not active.
    outcome = _why_not_requeued(queue.job_status(job_id=job_id, tenant_id=tenant_id))
    logger.info(
        "job retry refused",
        extra={"event": "job_retry", "job_id": str(job_id), "tenant_id": tenant_id, "outcome": outcome.value},
    )
    return outcome


def _why_not_requeued(row: tuple[str, str | None] | None) -> RetryOutcome:
    if row is None:
        return RetryOutcome.GONE
    job_status, task_status = row
    if job_status == JobStatus.CANCELLED:
        # Deleting a task cancels its dead jobs: say the reason that holds for good, the task is gone.
        return RetryOutcome.TASK_DELETED if task_status == TaskStatus.DELETED else RetryOutcome.CANCELLED
    if job_status != JobStatus.DEAD:
        return RetryOutcome.NOT_DEAD
    return RetryOutcome.TASK_DELETED if task_status == TaskStatus.DELETED else RetryOutcome.TASK_PAUSED


_BULK_OUTCOMES = {
    None: RetryOutcome.GONE,
    "dead": RetryOutcome.REQUEUED,
    "dead:paused": RetryOutcome.TASK_PAUSED,
    "dead:deleted": RetryOutcome.TASK_DELETED,
    "cancelled": RetryOutcome.CANCELLED,
}


def jobs_retry_paced(*, job_ids: Sequence[uuid.UUID], per_second: float) -> dict[uuid.UUID, RetryOutcome]:
    """Support staff's bulk retry: each dead job back in the queue as `job_retry` does, paced.

    Pacing without sleeping in the request: the jobs are due `1 / per_second` apart
    (`per_second <= 0`: all at once), so the executors call the tenants' endpoints at
    that pace however fast the request returns. One transaction for the whole batch.
    """
    spacing = 1.0 / per_second if per_second > 0 else 0.0
    before = queue.requeue_dead_jobs_staggered(job_ids=job_ids, spacing_seconds=spacing)
    outcomes: dict[uuid.UUID, RetryOutcome] = {}
    for job_id in job_ids:
        status = before.get(job_id)
        outcomes[job_id] = _BULK_OUTCOMES.get(status, RetryOutcome.NOT_DEAD)
    requeued = [str(job_id) for job_id, outcome in outcomes.items() if outcome is RetryOutcome.REQUEUED]
    logger.info(
        "jobs requeued",
        extra={"event": "job_retry_bulk", "requeued": len(requeued), "spacing_seconds": spacing, "job_ids": requeued},
    )
    return outcomes


class ChangeOutcome(enum.Enum):
    """What a guarded cancel or discard did."""

    DONE = "done"  # cancelled (was pending) or discarded (was dead)
    GONE = "gone"  # 404: archived, never existed, or another tenant's
    WRONG_STATUS = "wrong_status"  # 409: it exists but is no longer pending (cancel) or dead (discard)


CANCELLED_BY_TENANT = "cancelled by the tenant"
CANCELLED_BY_SUPPORT = "cancelled by support"


def _explained(done: bool, *, job_id: uuid.UUID, tenant_id: str | None, event: str) -> ChangeOutcome:
    if done:
        outcome = ChangeOutcome.DONE
    else:
        # The guard missed: the archiver, a claim, a retry, or another cancel got there first.
        gone = queue.job_status(job_id=job_id, tenant_id=tenant_id) is None
        outcome = ChangeOutcome.GONE if gone else ChangeOutcome.WRONG_STATUS
    logger.info(event, extra={"event": event, "job_id": str(job_id), "tenant_id": tenant_id, "outcome": outcome.value})
    return outcome


def job_cancel(*, job_id: uuid.UUID, tenant_id: str | None) -> ChangeOutcome:
    """Take a pending job out of the queue for good (`tenant_id=None`: support staff, any tenant's).

    One guarded UPDATE on status='pending' decides; a running job is not stopped
    (its claim stands and its result lands), so it is "no longer pending".
    """
    reason = CANCELLED_BY_SUPPORT if tenant_id is None else CANCELLED_BY_TENANT
    done = queue.cancel_pending_job(job_id=job_id, tenant_id=tenant_id, reason=reason)
    return _explained(done, job_id=job_id, tenant_id=tenant_id, event="job_cancel")


def job_discard(*, job_id: uuid.UUID, tenant_id: str | None) -> ChangeOutcome:
    """Take a dead job out of the dead-letter queue for good; it keeps its last error."""
    done = queue.discard_dead_job(job_id=job_id, tenant_id=tenant_id)
    return _explained(done, job_id=job_id, tenant_id=tenant_id, event="job_discard")
