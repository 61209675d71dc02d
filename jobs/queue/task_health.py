"""How a task is doing, written by whoever ends an attempt: the executor's result batch and the reconciler's sweep.

One owner for the write (the rule itself is `tasks.run_health.next_health`): in the caller's
transaction, after its jobs are locked and before their UPDATE (which reads the tasks' status, so
an auto-pause here cancels a retry there), lock the batch's tasks in id order and write every
task's last run, dead jobs in a row and auto-pause in one UPDATE per batch, never one per job.
After the jobs' UPDATE the caller cancels the paused tasks' pending jobs (`cancel_auto_paused`).
An auto-pause is recorded in the task's audit trail (tasks.changes, by "system") in the same transaction.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import connection

from jobs.queue.lifecycle import REASON_AUTO_PAUSED, cancel_task_jobs
from jobs.queue.statements import STATEMENTS
from tasks import changes, run_health
from tasks.models import TaskChangeAction, TaskStatus

logger = logging.getLogger(__name__)

# One ended attempt of the batch, in the order the batch holds them (oldest first):
# (task id as stored, tenant id, the attempt).
TaskAttempt = tuple[bytes, str, run_health.Attempt]

# The JSON document `result_update_tasks` reads: one row per task of the batch.
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


def update_task_health(
    cursor: Any, attempts: Iterable[TaskAttempt], *, prior: dict[bytes, tuple[str, int]] | None = None
) -> list[tuple[str, uuid.UUID]]:
    """One UPDATE of the attempts' tasks (last run, dead jobs in a row, auto-pause); the (tenant, task) it paused.

    `prior`, when given, receives each locked task's (status, dead jobs in a row) before this write
    (the notifications' task.failing and job.dead read them: jobs.queue.notifications).
    """
    by_task: dict[bytes, list[run_health.Attempt]] = {}
    tenants: dict[bytes, str] = {}
    for task_id, tenant_id, attempt in attempts:
        tenants[task_id] = tenant_id
        by_task.setdefault(task_id, []).append(attempt)
    if not by_task:
        return []
    # In id order, as every writer of task health locks them: two batches sharing tasks (executors',
    # the reconciler's) queue on the first shared task instead of deadlocking.
    # Rendered with our literals (statements.literal), as the jobs' lock and write: the driver's quoting of
    # a batch's ids, times and flags was most of this function's CPU.
    db = connection.connection
    cursor.execute(STATEMENTS["result_lock_tasks"].render(db, None, [(task_id,) for task_id in sorted(by_task)]))
    rows: list[tuple] = []
    paused = []
    reasons = []
    for task_id, status, failures, auto_pause_after in cursor.fetchall():
        task_id = bytes(task_id)
        if prior is not None:
            prior[task_id] = (status, failures)
        state = run_health.next_health(
            status=status,
            consecutive_failures=failures,
            auto_pause_after=auto_pause_after,
            default_auto_pause_after=settings.AUTO_PAUSE_AFTER_DEAD_JOBS,
            attempts=by_task[task_id],
        )
        last = state.last
        rows.append(
            (
                task_id,
                state.consecutive_failures,
                last.job_id,
                last.scheduled_at,
                last.outcome,
                last.http_status,
                state.pause,
                state.paused_reason,
            )
        )
        if state.pause:
            paused.append((tenants[task_id], uuid.UUID(bytes=task_id)))
            reasons.append(state.paused_reason)
    if rows:  # jobs without a task row (tests, benches) have nothing to update
        cursor.execute(STATEMENTS["result_update_tasks"].render(db, None, rows, columns=TASK_HEALTH_COLUMNS))
    for (tenant_id, paused_id), reason in zip(paused, reasons, strict=True):
        # The caller's transaction: the pause and its record commit together. Rare (a task pauses
        # once per run of dead jobs), so one INSERT per paused task, never per job. No version: an
        # auto-pause leaves the ETag to the tenant's edits.
        changes.record_change(
            task_id=paused_id,
            tenant_id=tenant_id,
            action=TaskChangeAction.AUTO_PAUSE,
            actor=changes.SYSTEM_ACTOR,
            changes=changes.diff(
                {"status": TaskStatus.ACTIVE, "paused_reason": ""},
                {"status": TaskStatus.PAUSED, "paused_reason": reason},
            ),
        )
    return paused


def cancel_auto_paused(paused: Iterable[tuple[str, uuid.UUID]]) -> None:
    """Cancel the pending jobs of the tasks `update_task_health` paused, in its transaction, after the jobs' UPDATE."""
    for tenant_id, task_id in paused:
        # An auto-pause is a pause: the task's other pending jobs leave the queue with it.
        cancel_task_jobs(tenant_id=tenant_id, task_id=task_id, deleted=False, reason=REASON_AUTO_PAUSED)


def log_auto_paused(paused: Iterable[tuple[str, uuid.UUID]]) -> None:
    """One warning per task paused automatically; call it after the commit."""
    for tenant_id, task_id in paused:
        logger.warning(
            "task paused automatically",
            extra={"event": "task_auto_paused", "task_id": str(task_id), "tenant_id": tenant_id},
        )
