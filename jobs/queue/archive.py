"""The archiver's two statements: read finished jobs as records, delete them as read."""

from __future__ import annotations

from typing import Any, NamedTuple

from django.conf import settings
from django.db import connection

from domain.records import JobRecord, record_from_sql_row
from jobs.queue.statements import STATEMENTS


class FinishedJob(NamedTuple):
    """A finished job as read for the archive: its record, and its fence (the delete's guard)."""

    record: JobRecord
    fence: int


def finished_jobs(*, status: str, age_seconds: int, limit: int) -> list[FinishedJob]:
    """Up to `limit` jobs of a terminal `status` finished more than `age_seconds` ago, oldest first."""
    params: dict[str, Any] = {"status": status, "age_seconds": age_seconds, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["archive_select"].bind(params))
        return [FinishedJob(record_from_sql_row(row[:-1]), row[-1]) for row in cursor.fetchall()]


def delete_archived(jobs: list[FinishedJob]) -> int:
    """Delete the jobs whose (id, status, fence) are still as read; returns how many.

    Call only once the history store holds every one of them (history first).
    """
    if not jobs:
        return 0
    # Guarded by (id, status, fence) as read: a job retried by hand since no longer matches.
    guards = [(job.record.id.bytes, job.record.status, job.fence) for job in jobs]
    with connection.cursor() as cursor:
        statement = STATEMENTS["archive_delete_unhinted" if settings.DATABASE_VITESS else "archive_delete"]
        cursor.execute(*statement.bind(rows=guards, columns=("id", "status", "fence")))
        return cursor.rowcount
