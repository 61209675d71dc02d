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

from database.sqlfiles import expand, load_queries
from domain.records import STORED_FIELDS, record_from_sql_row, sql_columns
from history.base import NEWEST, HistoryStore, HistoryUnavailable, JobRecord, Position

# job_history names the job's id job_id; every column list comes from the record's fields.
_SELECT_COLUMNS = sql_columns(id_column="job_id")
_INSERT_COLUMNS = ", ".join("job_id" if name == "id" else name for name in STORED_FIELDS)
# The primary key (tenant_id, task_id, scheduled_at, job_id) never changes on a rewrite.
_UPDATED = [name for name in STORED_FIELDS if name not in {"id", "tenant_id", "task_id", "scheduled_at"}]
_UPDATE_COLUMNS = ", ".join(f"{name} = VALUES({name})" for name in [*_UPDATED, "expires_at"])
_COLUMN_LISTS = {
    "{record_columns}": _SELECT_COLUMNS,
    "{insert_columns}": _INSERT_COLUMNS,
    "{update_columns}": _UPDATE_COLUMNS,
}


def _with_columns(query: str) -> str:
    for marker, columns in _COLUMN_LISTS.items():
        query = query.replace(marker, columns)
    return query


QUERIES = {name: _with_columns(query) for name, query in load_queries(Path(__file__).parent / "sql").items()}

WRITE_CHUNK = 500  # rows per INSERT: well under max_allowed_packet with truncated bodies
_COLUMNS = len(STORED_FIELDS) + 1  # and expires_at


@overload
def to_db(value: dt.datetime) -> dt.datetime: ...
@overload
def to_db(value: None) -> None: ...
def to_db(value: dt.datetime | None) -> dt.datetime | None:
    """Naive UTC, as the connection (time_zone '+00:00') stores it."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value


def _sql_value(name: str, value):
    if name in ("id", "task_id"):
        return value.bytes
    return to_db(value) if isinstance(value, dt.datetime) else value


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

    def write_many(self, records: Iterable[JobRecord]) -> None:
        records = list(records)
        if not records:
            return
        # The database's clock decides expiry, as it decides every other due time.
        ((expires_at,),) = self._fetch("SELECT NOW(6) + INTERVAL %s SECOND", [self.ttl_seconds])
        for start in range(0, len(records), WRITE_CHUNK):
            chunk = records[start : start + WRITE_CHUNK]
            params: list = []
            for record in chunk:
                params += [_sql_value(name, getattr(record, name)) for name in STORED_FIELDS]
                params.append(expires_at)
            self._execute(expand(QUERIES["history_upsert"], len(chunk), _COLUMNS), params)

    def get(self, tenant_id: str, job_id: uuid.UUID) -> JobRecord | None:
        rows = self._fetch(QUERIES["history_get"], [tenant_id, job_id.bytes])
        return record_from_sql_row(rows[0]) if rows else None

    def page(self, tenant_id: str, task_id: uuid.UUID, cursor: Position | None, limit: int) -> list[JobRecord]:
        before_at, before_id = cursor or NEWEST
        at = to_db(before_at)
        params = [tenant_id, task_id.bytes, at, at, before_id.bytes, limit]
        return [record_from_sql_row(row) for row in self._fetch(QUERIES["history_page"], params)]

    def purge_expired(self, *, limit: int) -> int:
        return self._execute(QUERIES["history_purge_expired"], [limit])
