"""An in-memory history store: the port's reference behaviour, for tests and demos.

Shipped as real code (like Django's locmem mail backend) so unit tests of the
job API and the archiver exercise the same contract as the real adapters. It
keeps records until the process ends; `fail_with` makes every call raise, to
test what callers do when the store is down.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable

from history.base import NEWEST, HistoryStore, JobRecord, Position


class InMemoryHistoryStore(HistoryStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[tuple[str, uuid.UUID], JobRecord] = {}
        self.writes = 0  # records written, duplicates included
        self.fail_with: Exception | None = None

    def _check(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    def write_many(self, records: Iterable[JobRecord]) -> None:
        self._check()
        with self._lock:
            for record in records:
                self._records[(record.tenant_id, record.id)] = record
                self.writes += 1

    def get(self, tenant_id: str, job_id: uuid.UUID) -> JobRecord | None:
        self._check()
        with self._lock:
            return self._records.get((tenant_id, job_id))

    def page(self, tenant_id: str, task_id: uuid.UUID, cursor: Position | None, limit: int) -> list[JobRecord]:
        self._check()
        before = tuple(cursor or NEWEST)
        with self._lock:
            matching = [
                r
                for r in self._records.values()
                if r.tenant_id == tenant_id and r.task_id == task_id and (r.scheduled_at, r.id) < before
            ]
        matching.sort(key=lambda r: (r.scheduled_at, r.id), reverse=True)
        return matching[:limit]

    def all(self) -> list[JobRecord]:
        """Every record, for assertions."""
        with self._lock:
            return list(self._records.values())
