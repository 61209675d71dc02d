"""The queue's side of a task's lifecycle: pause and delete take its pending jobs out; run now adds one."""

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
