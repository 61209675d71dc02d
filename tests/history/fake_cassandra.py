"""A unit-level stand-in for a driver Session, for the Cassandra adapter's tests.

It understands exactly the adapter's prepared statements (nothing else is
accepted), keeps rows in dictionaries the way Cassandra lays them out
(partition → clustering order), treats UNSET as "leave the cell alone" and
null as a written tombstone, truncates timestamps to milliseconds and returns
naive UTC datetimes as the driver does. `execute_async` completes on a
background thread and records how many statements were in flight at once, so
the 64-in-flight bound can be measured. Not a Cassandra: no TTL, no
consistency, no paging state.
"""

from __future__ import annotations

import calendar
import datetime as dt
import queue
import re
import threading
import uuid
from types import SimpleNamespace

from cassandra.query import UNSET_VALUE

from history import cassandra_store as cs

_INSERT = re.compile(r"INSERT INTO (\w+) \(([^)]*)\)")
_RECORD_COLUMNS = [c.strip() for c in cs._RECORD_COLUMNS.split(",")]


def _driver_timestamp(value):
    """What a timestamp becomes after a round trip: naive UTC, milliseconds."""
    if not isinstance(value, dt.datetime):
        return value
    millis = calendar.timegm(value.utctimetuple()) * 1000 + value.microsecond // 1000
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)


def _uuid_order(value: uuid.UUID):
    return (value.version or 0, value.bytes)  # Cassandra's UUIDType: version first, then the bytes


class FakePrepared:
    def __init__(self, cql: str) -> None:
        self.query_string = cql
        self.consistency_level = None


class FakeFuture:
    """Like the driver's ResponseFuture: callbacks run once, at completion or at once if already done."""

    def __init__(self) -> None:
        self._callbacks: tuple | None = None
        self._outcome: tuple | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    def add_callbacks(self, callback, errback):
        with self._lock:
            self._callbacks = (callback, errback)
            outcome = self._outcome
        if outcome is not None:
            self._fire(outcome)

    def complete(self, ok: bool, value) -> None:
        with self._lock:
            self._outcome = (ok, value)
            ready = self._callbacks is not None
        self._done.set()
        if ready:
            self._fire(self._outcome)

    def result(self):
        assert self._done.wait(10), "the fake session never answered"
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    def _fire(self, outcome) -> None:
        callback, errback = self._callbacks
        ok, value = outcome
        (callback if ok else errback)(value)


class FakeCassandraSession:
    def __init__(self, *, hold_until_in_flight: int = 64) -> None:
        self.prepared: list[FakePrepared] = []
        self.executed: list[tuple[str, tuple]] = []  # (cql, values) in the order received
        self.history: dict[tuple, dict[tuple, dict]] = {}
        self.by_id: dict[tuple, dict] = {}
        self.fail_when = None  # callable(cql, values) -> Exception | None
        self.in_flight = 0
        self.max_in_flight = 0
        self._hold = hold_until_in_flight
        self._lock = threading.Lock()
        self._pending: queue.Queue = queue.Queue()
        self._completer = threading.Thread(target=self._complete_forever, daemon=True)
        self._completer.start()

    # --- the driver's Session surface the adapter uses ---

    def prepare(self, cql: str) -> FakePrepared:
        if cql not in cs.STATEMENTS.values():
            raise AssertionError(f"unexpected statement: {cql}")
        statement = FakePrepared(cql)
        self.prepared.append(statement)
        return statement

    def execute(self, statement, parameters=None):
        return _Rows(self._run(statement, tuple(parameters or ())))

    def execute_async(self, statement, parameters=None):
        future = FakeFuture()
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self._pending.put((future, statement, tuple(parameters or ())))
        return future

    # --- internals ---

    def _complete_forever(self) -> None:
        held: list = []
        while True:
            try:
                held.append(self._pending.get(timeout=0.005))
                if len(held) < self._hold:
                    continue  # let submissions pile up, as slow replicas would
                batch = [held.pop(0)]
            except queue.Empty:
                batch, held = held, []  # nothing new is coming: answer everything held
            for future, statement, values in batch:
                with self._lock:
                    self.in_flight -= 1
                try:
                    outcome = (True, self._run(statement, values))
                except Exception as exc:  # handed to the errback, as the driver does
                    outcome = (False, exc)
                future.complete(*outcome)

    def _run(self, statement: FakePrepared, values: tuple) -> list:
        cql = statement.query_string
        with self._lock:
            self.executed.append((cql, values))
        if self.fail_when is not None:
            error = self.fail_when(cql, values)
            if error is not None:
                raise error
        if cql.startswith("INSERT"):
            self._insert(cql, values)
            return []
        return self._select(cql, values)

    def _insert(self, cql: str, values: tuple) -> None:
        table, columns = _INSERT.match(cql).groups()
        names = [c.strip() for c in columns.split(",")]
        assert len(values) == len(names) + 1, "every column plus the TTL"
        row = dict(zip(names, values[:-1], strict=True))
        with self._lock:
            if table == "job_history":
                partition = self.history.setdefault((row["tenant_id"], row["task_id"], row["bucket"]), {})
                key = (_driver_timestamp(row["scheduled_at"]), row["job_id"])
                stored = partition.setdefault(key, {})
            else:
                stored = self.by_id.setdefault((row["tenant_id"], row["job_id"]), {})
            for name, value in row.items():
                if value is UNSET_VALUE:
                    continue  # an unset cell is not written at all
                stored[name] = _driver_timestamp(value)  # None stays None: a tombstone

    def _select(self, cql: str, values: tuple) -> list:
        with self._lock:
            if cql == cs.SELECT_BY_ID:
                row = self.by_id.get(values)
                return [SimpleNamespace(task_id=row["task_id"], scheduled_at=row["scheduled_at"])] if row else []
            tenant_id, task_id, bucket = values[:3]
            partition = self.history.get((tenant_id, task_id, bucket), {})
            ordered = sorted(partition.items(), key=lambda kv: (kv[0][0], _uuid_order(kv[0][1])), reverse=True)
            if cql == cs.SELECT_ONE:
                wanted = (_driver_timestamp(values[3]), values[4])
                rows = [row for key, row in ordered if key == wanted]
            elif cql == cs.SELECT_PAGE_BEFORE:
                before = (_driver_timestamp(values[3]), _uuid_order(values[4]))
                rows = [row for key, row in ordered if (key[0], _uuid_order(key[1])) < before][: values[5]]
            elif cql == cs.SELECT_PAGE_ALL:
                rows = [row for _key, row in ordered][: values[3]]
            else:
                raise AssertionError(f"unexpected select: {cql}")
            return [SimpleNamespace(**{name: row.get(name) for name in _RECORD_COLUMNS}) for row in rows]

    def statements_named(self, cql: str) -> list[tuple]:
        return [values for text, values in self.executed if text == cql]


class _Rows(list):
    def one(self):
        return self[0] if self else None
