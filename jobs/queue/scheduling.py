"""The scheduler's tick as one transaction of three statements (jobs/sql/scheduler.sql).

The queue runs the transaction; the caller plans it: `plan` receives the locked
due tasks and returns the JSON document of their jobs and next runs (the format
is in scheduler.sql), which the insert and the advance both read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from django.db import connection, transaction

from jobs.queue.statements import STATEMENTS


class DueTask(NamedTuple):
    """A `scheduler_select_due` row (a tuple: a tick reads thousands of them)."""

    id: bytes
    next_run_at: datetime  # naive UTC, as the driver returns DATETIME
    cron_expression: str | None
    timezone: str | None
    missed_runs: str  # the task's missed-runs policy (tasks/schedule/missed.py)
    db_now: datetime  # the clock the WHERE compared with


def schedule_due_tasks(
    *, lookahead_microseconds: int, limit: int, plan: Callable[[list[DueTask]], str]
) -> list[DueTask]:
    """Lock up to `limit` due tasks oldest first, insert their jobs, advance them, commit; the tasks."""
    # durable: refuse to run inside a caller's transaction, which would hold the row locks past the tick.
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        params = {"lookahead_microseconds": lookahead_microseconds, "limit": limit}
        cursor.execute(*STATEMENTS["scheduler_select_due"].bind(params))
        rows = [DueTask._make(row) for row in cursor.fetchall()]
        if rows:
            document = plan(rows)
            # The connection counts found rows (Django sets CLIENT_FOUND_ROWS), so the row
            # count cannot tell a new job from an existing one: it is not reported.
            cursor.execute(*STATEMENTS["scheduler_insert_jobs"].bind({"due": document}))
            # After the insert, which reads the run it schedules from the task's next_run_at.
            cursor.execute(*STATEMENTS["scheduler_advance_tasks"].bind({"due": document}))
    return rows


def max_allowed_packet() -> int:
    """The server's max_allowed_packet in bytes (bounds one statement's JSON document)."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["scheduler_max_allowed_packet"].bind())
        (packet,) = cursor.fetchone()
    return int(packet)
