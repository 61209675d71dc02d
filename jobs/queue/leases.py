"""The reconciler's statements: the other half of the lease, and the task health it ends attempts with."""

from __future__ import annotations

from django.db import connection, transaction

from jobs.queue import notifications, task_health
from jobs.queue.statements import STATEMENTS
from tasks import run_health


def sweep_expired_leases(*, limit: int) -> int:
    """Take back up to `limit` running jobs whose lease expired, and keep their tasks' health; how many.

    One short transaction per sweep, never a statement per job: find the expired rows, lock
    them, lock their tasks and write how each is doing (as the result write does: a lease expired on the
    last attempt is a dead job, otherwise the last run is retrying, with no HTTP status), take
    the rows back, then cancel the pending jobs of the tasks that paused automatically.
    """
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["reconcile_find_expired"].bind({"limit": limit}))
        found = [(bytes(job_id),) for (job_id,) in cursor.fetchall()]
        if not found:
            return 0
        cursor.execute(*STATEMENTS["reconcile_lock_expired"].bind(None, found))
        locked = cursor.fetchall()
        if not locked:  # each one's result landed meanwhile, or another sweep holds it
            return 0
        attempts = [_task_attempt(row) for row in locked]
        prior: dict[bytes, tuple[str, int]] = {}
        # Before the jobs' UPDATE, which reads the tasks' status: an auto-pause here cancels a retry there.
        paused = task_health.update_task_health(cursor, attempts, prior=prior)
        rows = [(bytes(row[0]), row[-1]) for row in locked]  # (id, fence) as read
        cursor.execute(*STATEMENTS["reconcile_expired_leases"].bind(None, rows, columns=("id", "fence")))
        # The swept rows are locked by this transaction, so each one must change: exactly the
        # jobs whose health was written above.
        if cursor.rowcount != len(locked):
            raise RuntimeError(f"lease sweep changed {cursor.rowcount} of {len(locked)} locked rows")
        task_health.cancel_auto_paused(paused)
        # A lease expired on the last attempt is a dead job: its notifications commit with the sweep.
        deaths = [
            notifications.Death(row[5], bytes(row[3]), bytes(row[0]), row[1], None, "lease expired")
            for row, (_, _, attempt) in zip(locked, attempts, strict=True)
            if attempt.outcome == run_health.DEAD
        ]
        if deaths:
            notifications.emit_after_attempts(cursor, deaths=deaths, attempts=attempts, prior=prior, paused=paused)
    task_health.log_auto_paused(paused)
    return len(locked)


def _task_attempt(row: tuple) -> task_health.TaskAttempt:
    """A swept row as its task's attempt: no result came back, so no HTTP status."""
    job_id, attempt, max_attempts, task_id, scheduled_at, tenant_id, _fence = row
    # The statement's own rule (attempt >= max_attempts: dead); a retry of a task that is not
    # active is cancelled there, and tasks.run_health.next_health shows it so.
    outcome = run_health.DEAD if attempt >= max_attempts else run_health.RETRYING
    return bytes(task_id), tenant_id, run_health.Attempt(bytes(job_id), scheduled_at, outcome, None)
