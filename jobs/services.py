"""Use cases on jobs that the API, the admin and the loops share."""

from __future__ import annotations

import enum
import logging
import uuid

from django.db import connection

from jobs.sql import QUERIES

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
    params = [job_id.bytes, tenant_id, tenant_id]
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["retry_dead_job"], params)
        if cursor.rowcount == 1:
            logger.info("job requeued", extra={"event": "job_retry", "job_id": str(job_id), "tenant_id": tenant_id})
            return RetryOutcome.REQUEUED
        # The guard missed: a concurrent retry, the archiver, or a job that is not dead.
        cursor.execute(QUERIES["retry_job_status"], params)
        row = cursor.fetchone()
    outcome = RetryOutcome.GONE if row is None else RetryOutcome.NOT_DEAD
    logger.info(
        "job retry refused",
        extra={"event": "job_retry", "job_id": str(job_id), "tenant_id": tenant_id, "outcome": outcome.value},
    )
    return outcome


class ChangeOutcome(enum.Enum):
    """What a guarded cancel or discard did."""

    DONE = "done"  # cancelled (was pending) or discarded (was dead)
    GONE = "gone"  # 404: archived, never existed, or another tenant's
    WRONG_STATUS = "wrong_status"  # 409: it exists but is no longer pending (cancel) or dead (discard)


CANCELLED_BY_TENANT = "cancelled by the tenant"
CANCELLED_BY_SUPPORT = "cancelled by support"


def _guarded_change(statement: str, params: dict, *, event: str) -> ChangeOutcome:
    with connection.cursor() as cursor:
        cursor.execute(QUERIES[statement], params)
        if cursor.rowcount == 1:
            outcome = ChangeOutcome.DONE
        else:
            # The guard missed: the archiver, a claim, a retry, or another cancel got there first.
            cursor.execute(QUERIES["job_status_of"], params)
            outcome = ChangeOutcome.GONE if cursor.fetchone() is None else ChangeOutcome.WRONG_STATUS
    logger.info(
        event,
        extra={
            "event": event,
            "job_id": str(uuid.UUID(bytes=params["job_id"])),
            "tenant_id": params["tenant_id"],
            "outcome": outcome.value,
        },
    )
    return outcome


def job_cancel(*, job_id: uuid.UUID, tenant_id: str | None) -> ChangeOutcome:
    """Take a pending job out of the queue for good (`tenant_id=None`: support staff, any tenant's).

    One guarded UPDATE on status='pending' decides; a running job is not stopped
    (its claim stands and its result lands), so it is "no longer pending".
    """
    reason = CANCELLED_BY_SUPPORT if tenant_id is None else CANCELLED_BY_TENANT
    params = {"job_id": job_id.bytes, "tenant_id": tenant_id, "reason": reason}
    return _guarded_change("cancel_pending_job", params, event="job_cancel")


def job_discard(*, job_id: uuid.UUID, tenant_id: str | None) -> ChangeOutcome:
    """Take a dead job out of the dead-letter queue for good; it keeps its last error."""
    return _guarded_change("discard_dead_job", {"job_id": job_id.bytes, "tenant_id": tenant_id}, event="job_discard")
