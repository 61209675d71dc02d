"""The queue's side of a backfill (jobs.backfill): the runs already queued, and one insert of the missing ones."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from domain.ids import new_id
from jobs.queue.statements import STATEMENTS, json_rows


def backfill_existing_runs(*, task_id: uuid.UUID, start: datetime, end: datetime) -> set[datetime]:
    """The task's runs in the queue with scheduled_at in [start, end) (aware UTC)."""
    params: dict[str, Any] = {"task_id": task_id.bytes, "from": _naive(start), "to": _naive(end)}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["backfill_existing_runs"].bind(params))
        return {row[0].replace(tzinfo=UTC) for row in cursor.fetchall()}


def insert_backfill_jobs(
    *, tenant_id: str, task_id: uuid.UUID, runs: Sequence[tuple[datetime, str | None]]
) -> dict[str, int]:
    """Insert one job per run (aware UTC) unless it exists; the new jobs counted by status (pending, skipped).

    A run with a reason (its overlap policy's, jobs.backfill) is made skipped with it; an excluded
    calendar date wins over it, as in the scheduler's tick.

    The caller holds the task row locked (FOR UPDATE) in its transaction; an inactive task gets none.
    """
    if not runs:
        return {}
    ids = [new_id() for _ in runs]
    document = json_rows([(job_id.bytes, _naive(run), reason) for job_id, (run, reason) in zip(ids, runs, strict=True)])
    params: dict[str, Any] = {"runs": document, "task_id": task_id.bytes, "tenant_id": tenant_id}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["backfill_insert_jobs"].bind(params))
        cursor.execute(*STATEMENTS["backfill_inserted"].bind(rows=[(job_id.bytes,) for job_id in ids]))
        return {status: int(count) for status, count in cursor.fetchall()}


def _naive(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None)
