"""The scheduler's tick as one transaction of three to six statements (jobs/sql/scheduler.sql).

The queue runs the transaction; the caller plans it: `plan` receives the locked
due tasks and returns the JSON documents of their jobs and next runs (the format
is in scheduler.sql): the plain tasks' jobs, the overlap-guarded tasks' jobs, and
every row for the advance. A batch of plain tasks runs three statements, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from django.db import connection, transaction
from django.utils import timezone

from domain import notification_events
from jobs.queue import notifications
from jobs.queue.deadlocks import retry_deadlocks
from jobs.queue.statements import STATEMENTS
from tasks import changes as audit
from tasks.models import TaskChangeAction


class DueTask(NamedTuple):
    """A `scheduler_select_due` row (a tuple: a tick reads thousands of them)."""

    id: bytes
    next_run_at: datetime  # naive UTC, as the driver returns DATETIME
    cron_expression: str | None
    timezone: str | None
    missed_runs: str  # the task's missed-runs policy (tasks/schedule/missed.py)
    db_now: datetime  # the clock the WHERE compared with
    every_seconds: int | None  # an interval schedule (tasks/schedule/every.py)
    window_seconds: int  # tasks/schedule/window.py
    overlap: str  # tasks/schedule/overlap.py
    ends_at: datetime | None  # naive UTC (tasks/schedule/bounds.py)
    max_runs: int | None
    runs_scheduled: int


@dataclass(frozen=True)
class TickPlan:
    """The tick's JSON documents (rows in scheduler.sql's format); a plain batch has one document for all."""

    jobs: str | None  # the jobs of tasks whose overlap is `allow`; None: none
    guarded: str | None  # the jobs of the other tasks; None: none
    advance: str | None  # the rows of tasks without run limits; None: none
    limited: str | None  # the rows of tasks with ends_at or max_runs; None: none
    replace: bool  # some guarded row's policy is `replace`
    completed: tuple[bytes, ...] = ()  # ids of the tasks this tick completes (past ends_at or max_runs)


def schedule_due_tasks(
    *,
    lookahead_microseconds: int,
    limit: int,
    plan: Callable[[list[DueTask]], TickPlan],
    on_attempt: Callable[[], None] = lambda: None,
) -> list[DueTask]:
    """Lock up to `limit` due tasks oldest first, insert their jobs, advance them, commit; the tasks.

    A deadlock victim (two schedulers' catch-ups, or a result batch updating the same tasks'
    health) is run again, planned anew from the rows it then locks; `on_attempt` is called before
    each attempt.
    """

    def once() -> list[DueTask]:
        on_attempt()
        return _schedule_due_tasks_once(lookahead_microseconds=lookahead_microseconds, limit=limit, plan=plan)

    return retry_deadlocks(once, what="tick")


def _schedule_due_tasks_once(
    *, lookahead_microseconds: int, limit: int, plan: Callable[[list[DueTask]], TickPlan]
) -> list[DueTask]:
    # durable: refuse to run inside a caller's transaction, which would hold the row locks past the tick.
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        params = {"lookahead_microseconds": lookahead_microseconds, "limit": limit}
        cursor.execute(*STATEMENTS["scheduler_select_due"].bind(params))
        rows = [DueTask._make(row) for row in cursor.fetchall()]
        if rows:
            planned = plan(rows)
            # The connection counts found rows (Django sets CLIENT_FOUND_ROWS), so the row
            # count cannot tell a new job from an existing one: it is not reported.
            if planned.jobs is not None:
                cursor.execute(*STATEMENTS["scheduler_insert_jobs"].bind({"due": planned.jobs}))
            if planned.guarded is not None:
                cursor.execute(*STATEMENTS["scheduler_insert_guarded_jobs"].bind({"due": planned.guarded}))
                if planned.replace:
                    # After the insert: the new run exists before the ones it replaces are cancelled.
                    cursor.execute(*STATEMENTS["scheduler_replace_waiting_jobs"].bind({"due": planned.guarded}))
            # After the inserts (a task's lock is held to the commit either way).
            if planned.advance is not None:
                cursor.execute(*STATEMENTS["scheduler_advance_tasks"].bind({"due": planned.advance}))
            if planned.limited is not None:
                cursor.execute(*STATEMENTS["scheduler_advance_limited_tasks"].bind({"due": planned.limited}))
            if planned.completed:
                _tell_completions(cursor, planned.completed)
    return rows


def _tell_completions(cursor, task_ids: tuple[bytes, ...]) -> None:
    """In the tick's transaction: each completed task's audit record and its tenant's `task.completed` event.

    Rare (a task completes once), so one read of the tasks' tenants and then a write per task; a
    completion never committed is never told, and one committed always is.
    """
    cursor.execute(*STATEMENTS["scheduler_completed_tasks"].bind(rows=[(task_id,) for task_id in task_ids]))
    rows = cursor.fetchall()
    now = timezone.now()
    found = []
    for task_id, tenant_id, status, runs in rows:
        task_uuid = uuid.UUID(bytes=bytes(task_id))
        audit.record_change(
            task_id=task_uuid,
            tenant_id=tenant_id,
            action=TaskChangeAction.COMPLETE,
            actor=audit.SYSTEM_ACTOR,
            changes=audit.diff({"status": "active"}, {"status": status}),
            at=now,
        )
        found.append(
            notification_events.task_completed(tenant_id=tenant_id, task_id=task_uuid, completed_at=now, runs=runs)
        )
    notifications.emit(found=found)


def max_allowed_packet() -> int:
    """The server's max_allowed_packet in bytes (bounds one statement's JSON document)."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["scheduler_max_allowed_packet"].bind())
        (packet,) = cursor.fetchone()
    return int(packet)
