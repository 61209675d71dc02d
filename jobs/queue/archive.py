"""The archiver's two statements: read finished jobs as records, delete them as read."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection

from domain.records import JobRecord, record_from_sql_row
from jobs.queue.statements import STATEMENTS


def finished_jobs(*, status: str, age_seconds: int, limit: int) -> list[JobRecord]:
    """Up to `limit` jobs of a terminal `status` finished more than `age_seconds` ago, oldest first."""
    params: dict[str, Any] = {"status": status, "age_seconds": age_seconds, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["archive_select"].bind(params))
        return [record_from_sql_row(row) for row in cursor.fetchall()]


def delete_archived(records: list[JobRecord]) -> int:
    """Delete the jobs whose (id, status, attempt) are still as read; returns how many.

    Call only once the history store holds every one of them (history first).
    """
    if not records:
        return 0
    # Guarded by (id, status, attempt) as read: a job retried by hand since no longer matches.
    guards = [(record.id.bytes, record.status, record.attempt) for record in records]
    with connection.cursor() as cursor:
        statement = STATEMENTS["archive_delete_unhinted" if settings.DATABASE_VITESS else "archive_delete"]
        cursor.execute(*statement.bind(rows=guards, columns=("id", "status", "attempt")))
        return cursor.rowcount
