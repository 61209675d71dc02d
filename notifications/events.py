"""Events emitted from outside the queue's own writes: a task completing (called by the scheduler).

The result write and the lease sweep emit job.dead, task.failing and task.auto_paused themselves
(jobs.queue.notifications.emit_after_attempts). `task_completed` lives with them in the queue, so
the scheduler (jobs.queue.scheduling, workers) can call it; this is its name for the layers above.
"""

from __future__ import annotations

from jobs.queue.notifications import emit, task_completed

__all__ = ["emit", "task_completed"]
