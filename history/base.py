"""The history port: where finished jobs live after they leave the queue.

A store keeps one `JobRecord` (domain.records) per job, keyed like the Cassandra table:
(tenant_id, task_id, scheduled_at, job_id), newest first, plus a lookup by
(tenant_id, job_id). The tenant is part of every key, so a read with the wrong
tenant finds nothing. Writes are upserts by key: the archiver may write a job
twice (a crash between its history write and its MySQL delete), and the second
write must change nothing. Adapters: `history.sql_store` (embedded default),
`history.cassandra_store`, and `history.memory` (a fake shipped as real code).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterable
from typing import overload

from domain.records import JobRecord, Position

UTC = dt.UTC

__all__ = ["NEWEST", "HistoryStore", "HistoryUnavailable", "JobRecord", "Position", "truncate_to_millis"]

# The position before every real one: paging with no cursor starts here.
NEWEST = (dt.datetime.max.replace(tzinfo=UTC), uuid.UUID(int=(1 << 128) - 1))


class HistoryUnavailable(Exception):
    """The store could not answer (down, timed out): the caller must fail, not guess."""


@overload
def truncate_to_millis(value: dt.datetime) -> dt.datetime: ...
@overload
def truncate_to_millis(value: None) -> None: ...
def truncate_to_millis(value: dt.datetime | None) -> dt.datetime | None:
    """Cassandra timestamps hold milliseconds: history keeps non-key times at that precision."""
    if value is None:
        return None
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


class HistoryStore:
    """The port. Subclasses implement the three operations; see the module docstring."""

    def write_many(self, records: Iterable[JobRecord]) -> None:
        """Upsert every record; raise (HistoryUnavailable) unless all of them are stored."""
        raise NotImplementedError

    def get(self, tenant_id: str, job_id: uuid.UUID) -> JobRecord | None:
        """The tenant's job, or None (absent, expired, or another tenant's)."""
        raise NotImplementedError

    def page(self, tenant_id: str, task_id: uuid.UUID, cursor: Position | None, limit: int) -> list[JobRecord]:
        """Up to `limit` records of the task strictly older than `cursor`, by (scheduled_at, job_id) DESC."""
        raise NotImplementedError

    def purge_expired(self, *, limit: int) -> int:
        """Delete up to `limit` expired records; stores with a native TTL do nothing."""
        return 0

    def close(self) -> None:
        """Release connections; the store may not be used afterwards."""
