"""The job record: one definition of a job as it is read back, from the queue or the history store.

The queue (`jobs.queue`) maps archive rows to it, the history port (`history.base`)
stores and returns it, the job API (`jobs.selectors`) shows it. Column lists are
derived from its fields (`STORED_FIELDS`, `sql_columns`), never restated. Neutral
(no app imports): history is a leaf that jobs uses, and both need this type.
What firing a job needs (`jobs.queue.ClaimedJob`) differs and has its own type.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, fields
from typing import Any, NamedTuple


class Position(NamedTuple):
    """A place in a task's history; a page holds the records strictly older than it."""

    scheduled_at: dt.datetime
    job_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A job without its request headers and body (the history never keeps those)."""

    id: uuid.UUID
    tenant_id: str
    task_id: uuid.UUID
    scheduled_at: dt.datetime  # exact (microseconds kept by every store: it is part of the history key)
    status: str
    attempt: int
    max_attempts: int
    priority: int
    request_method: str
    request_url: str
    http_status: int | None = None
    error: str | None = None
    response_body: str | None = None
    started_at: dt.datetime | None = None  # milliseconds once archived
    finished_at: dt.datetime | None = None  # milliseconds once archived
    # The attempt log as JSON text, oldest first, at most the last 20 attempts, carried as is
    # (its format and reader: domain.attempt_log).
    attempts: str | None = None
    # The task's labels when the job was created, JSON text carried as is (None: a job made before
    # jobs carried labels); the history keeps them, so a relabelled task's past runs keep theirs.
    labels: str | None = None
    next_attempt_at: dt.datetime | None = None  # only while queued: a finished job has none, the history none

    @property
    def position(self) -> Position:
        return Position(self.scheduled_at, self.id)


RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(JobRecord))
# What a history store keeps of a finished job: every field but the queue-only due time.
STORED_FIELDS: tuple[str, ...] = tuple(name for name in RECORD_FIELDS if name != "next_attempt_at")
_IDS = frozenset({"id", "task_id"})
_TIMES = frozenset({"scheduled_at", "started_at", "finished_at", "next_attempt_at"})


def sql_columns(names: tuple[str, ...] = STORED_FIELDS, *, id_column: str = "id") -> str:
    """The SELECT list for `names`, in that order (`job_id AS id` where the table names the id so)."""
    return ", ".join(f"{id_column} AS id" if name == "id" and id_column != "id" else name for name in names)


def record_from_sql_row(row: tuple[Any, ...], names: tuple[str, ...] = STORED_FIELDS) -> JobRecord:
    """A record from a MySQL row selected with `sql_columns(names)`: BINARY(16) ids, naive UTC times."""
    values: dict[str, Any] = {}
    for name, value in zip(names, row, strict=True):
        if name in _IDS:
            value = uuid.UUID(bytes=bytes(value))
        elif name in _TIMES and value is not None:
            value = value.replace(tzinfo=dt.UTC)
        values[name] = value
    return JobRecord(**values)
