"""The SQL history store: `job_history` in the same MySQL/MariaDB, the embedded default.

One machine then needs no Cassandra. Statements are in history/sql/history.sql;
the schema is history.models.HistoryEntry. Expired rows are invisible to reads
at once and deleted by the archiver's bounded purge.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import overload

from django.conf import settings
from django.db import DatabaseError, connections

from history.base import NEWEST, HistoryRecord, HistoryStore, HistoryUnavailable, Position
from jobs.sql import expand, load_queries

QUERIES = load_queries(Path(__file__).parent / "sql")

WRITE_CHUNK = 500  # rows per INSERT: well under max_allowed_packet with truncated bodies
_COLUMNS = 16


@overload
def to_db(value: dt.datetime) -> dt.datetime: ...
@overload
def to_db(value: None) -> None: ...
def to_db(value: dt.datetime | None) -> dt.datetime | None:
    """Naive UTC, as the connection (time_zone '+00:00') stores it."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value


@overload
def from_db(value: dt.datetime) -> dt.datetime: ...
@overload
def from_db(value: None) -> None: ...
def from_db(value: dt.datetime | None) -> dt.datetime | None:
    """Aware UTC from the connection's naive UTC."""
    return None if value is None else value.replace(tzinfo=dt.UTC)


def record_from_row(row: tuple) -> HistoryRecord:
    """A record from a row in job_history's column order (`history_get`, `history_page`, `archive_select`)."""
    (tenant_id, task_id, job_id, scheduled_at, status, attempt, max_attempts, priority) = row[:8]
    (request_method, request_url, http_status, error, response_body, started_at, finished_at) = row[8:]
    return HistoryRecord(
        tenant_id=tenant_id,
        task_id=uuid.UUID(bytes=bytes(task_id)),
        job_id=uuid.UUID(bytes=bytes(job_id)),
        scheduled_at=from_db(scheduled_at),
        status=status,
        attempt=attempt,
        max_attempts=max_attempts,
        priority=priority,
        request_method=request_method,
        request_url=request_url,
        http_status=http_status,
        error=error,
        response_body=response_body,
        started_at=from_db(started_at),
        finished_at=from_db(finished_at),
    )


class SqlHistoryStore(HistoryStore):
    """`job_history` through Django's connection `using` (the default database)."""

    def __init__(self, *, using: str = "default", ttl_seconds: int | None = None) -> None:
        self.using = using
        self.ttl_seconds = ttl_seconds or settings.HISTORY_TTL_SECONDS

    def _fetch(self, sql: str, params: list) -> list[tuple]:
        try:
            with connections[self.using].cursor() as cursor:
                cursor.execute(sql, params)
                return list(cursor.fetchall())
        except DatabaseError as exc:
            raise HistoryUnavailable(f"SQL history store: {exc}") from exc

    def _execute(self, sql: str, params: list) -> int:
        try:
            with connections[self.using].cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.rowcount
        except DatabaseError as exc:
            raise HistoryUnavailable(f"SQL history store: {exc}") from exc

    def write_many(self, records: Iterable[HistoryRecord]) -> None:
        records = list(records)
        if not records:
            return
        # The database's clock decides expiry, as it decides every other due time.
        ((expires_at,),) = self._fetch("SELECT NOW(6) + INTERVAL %s SECOND", [self.ttl_seconds])
        for start in range(0, len(records), WRITE_CHUNK):
            chunk = records[start : start + WRITE_CHUNK]
            params: list = []
            for r in chunk:
                params += [
                    r.tenant_id,
                    r.task_id.bytes,
                    to_db(r.scheduled_at),
                    r.job_id.bytes,
                    r.status,
                    r.attempt,
                    r.max_attempts,
                    r.priority,
                    r.request_method,
                    r.request_url,
                    r.http_status,
                    r.error,
                    r.response_body,
                    to_db(r.started_at),
                    to_db(r.finished_at),
                    expires_at,
                ]
            self._execute(expand(QUERIES["history_upsert"], len(chunk), _COLUMNS), params)

    def get(self, tenant_id: str, job_id: uuid.UUID) -> HistoryRecord | None:
        rows = self._fetch(QUERIES["history_get"], [tenant_id, job_id.bytes])
        return record_from_row(rows[0]) if rows else None

    def page(self, tenant_id: str, task_id: uuid.UUID, cursor: Position | None, limit: int) -> list[HistoryRecord]:
        before_at, before_id = cursor or NEWEST
        at = to_db(before_at)
        params = [tenant_id, task_id.bytes, at, at, before_id.bytes, limit]
        return [record_from_row(row) for row in self._fetch(QUERIES["history_page"], params)]

    def purge_expired(self, *, limit: int) -> int:
        return self._execute(QUERIES["history_purge_expired"], [limit])
