"""The queue's side of a task's lifecycle: pause and delete take its pending jobs out; run now adds one.

Also every statement on `run_requests` (run now's Idempotency-Keys): the lookup, the binding, and
the archiver's purge of expired keys.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connection

from jobs.queue.statements import STATEMENTS

REASON_PAUSED = "cancelled: task paused"
REASON_DELETED = "cancelled: task deleted"
REASON_AUTO_PAUSED = "cancelled: task paused automatically"


def cancel_task_jobs(*, tenant_id: str, task_id: uuid.UUID, deleted: bool, reason: str | None = None) -> int:
    """Cancel the task's pending jobs (and its dead ones when `deleted`); the number of jobs cancelled.

    Call it inside the transaction that changed the task's status, after that UPDATE.
    """
    params: dict[str, Any] = {
        "task_id": task_id.bytes,
        "tenant_id": tenant_id,
        "include_dead": deleted,
        "reason": reason or (REASON_DELETED if deleted else REASON_PAUSED),
    }
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["cancel_task_jobs"].bind(params))
        return cursor.rowcount


def insert_run_now_job(*, tenant_id: str, task_id: uuid.UUID, job_id: uuid.UUID) -> bool:
    """One job of the active task due now (the caller holds the task row locked); False if it is not active."""
    params: dict[str, Any] = {"job_id": job_id.bytes, "task_id": task_id.bytes, "tenant_id": tenant_id}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["insert_run_now_job"].bind(params))
        return cursor.rowcount == 1


def run_request_job(*, task_id: uuid.UUID, idempotency_key: str, retention_seconds: int) -> uuid.UUID | None:
    """The job a run of the task made under this key within the retention, or None (never used, or expired).

    Call it holding the task row locked (FOR UPDATE), as run now does.
    """
    params: dict[str, Any] = {
        "task_id": task_id.bytes,
        "idempotency_key": idempotency_key,
        "retention_seconds": retention_seconds,
    }
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["run_request_job"].bind(params))
        row = cursor.fetchone()
    return None if row is None else uuid.UUID(bytes=bytes(row[0]))


def bind_run_request(*, tenant_id: str, task_id: uuid.UUID, idempotency_key: str, job_id: uuid.UUID) -> None:
    """Bind the key to the job (rebinding an expired row); in run now's transaction, under the task's lock."""
    params: dict[str, Any] = {
        "task_id": task_id.bytes,
        "tenant_id": tenant_id,
        "idempotency_key": idempotency_key,
        "job_id": job_id.bytes,
    }
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["bind_run_request"].bind(params))


def purge_expired_run_requests(*, retention_seconds: int, limit: int) -> int:
    """Delete up to `limit` keys older than the retention, oldest first; how many were deleted."""
    params: dict[str, Any] = {"retention_seconds": retention_seconds, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["purge_expired_run_requests"].bind(params))
        return cursor.rowcount
