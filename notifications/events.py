"""Events emitted from outside the queue's own writes: a task completing (called by the scheduler).

The result write and the lease sweep emit job.dead, task.failing and task.auto_paused themselves
(jobs.queue.notifications.emit_after_attempts); this is the entry point for the others.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from domain import notification_events
from jobs.queue.notifications import emit


def task_completed(
    *, tenant_id: str, task_id: uuid.UUID, completed_at: datetime, reason: str | None = None, runs: int | None = None
) -> bool:
    """Tell the tenant its task completed (ends_at passed, max_runs reached); True when a notification was queued.

    Call it inside the transaction that marks the task completed: the notification commits with
    the transition or not at all. The same (task, completed_at) twice is one notification; a
    tenant without a subscription to task.completed gets none (one primary-key read, nothing written).
    """
    event = notification_events.task_completed(
        tenant_id=tenant_id, task_id=task_id, completed_at=completed_at, reason=reason, runs=runs
    )
    return emit(found=[event]) == 1
