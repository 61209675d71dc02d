"""Signals tasks sends to the layers above it (tasks imports no other app; jobs listens).

`task_stopped` is sent inside the transaction that paused or deleted a task,
right after the task's UPDATE, so a receiver's statements commit or roll back
with it: the jobs app cancels the task's pending jobs there (jobs/task_stopped.py).
Arguments: tenant_id, task_id, deleted (False for a pause).

`tasks_completed` is sent by the scheduler after a tick that completed tasks (past their
ends_at or max_runs: tasks.schedule.bounds) has committed, once per tick, never inside
its transaction. Arguments: task_ids (a tuple of uuid.UUID).
"""

from django.dispatch import Signal

task_stopped = Signal()
tasks_completed = Signal()
