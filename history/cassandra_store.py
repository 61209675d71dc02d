"""The Cassandra history store, through the driver django-cassandra-engine ships.

Tables (created by `manage.py sync_history_schema`, see `schema_statements`):
`job_history`, partitioned by (tenant_id, task_id, bucket = UTC month of
scheduled_at as yyyymm) so a per-minute cron never grows one partition forever,
clustered newest first; and `job_by_id`, keyed by (tenant_id, job_id), saying
where a job lives, because Cassandra reads only by a full partition key. The
tenant is in both partition keys, so a read with the wrong tenant finds nothing.

Writes: one prepared INSERT per row and table, at most `concurrency` (64) in
flight, never a BATCH (a cross-partition batch funnels through one coordinator
and its batch log). Empty columns are bound UNSET, not null: a null writes a
tombstone that slows reads until compaction. The price: a rewrite leaves the
cells it does not set as they were. Only a job archived, then retried by hand
before the archiver's delete (which then misses), then archived again with an
empty column shows it: its copy keeps the earlier error or HTTP status.

Reads and writes run at LOCAL_QUORUM (CASSANDRA_CONSISTENCY), so a job the archiver has just moved (and
deleted from MySQL) is visible to the next history read: a LOCAL_ONE pair could
show a gap.

Timestamps hold milliseconds. scheduled_at is part of the key and MySQL keeps
microseconds, so the microseconds below the millisecond go in their own column
(`scheduled_at_micros`, unset when 0) and a record reads back exactly as written.
Positions are compared at millisecond precision here; two jobs of one task
within one millisecond cannot occur (one job per run; cron runs are minutes apart).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, overload

from cassandra import ConsistencyLevel, OperationTimedOut, RequestExecutionException
from cassandra.cluster import NoHostAvailable
from cassandra.query import UNSET_VALUE
from django.conf import settings

from domain.records import STORED_FIELDS
from history.base import HistoryStore, HistoryUnavailable, JobRecord, Position, truncate_to_millis

logger = logging.getLogger(__name__)

MAX_IN_FLIGHT = 64
UNAVAILABLE_ERRORS = (NoHostAvailable, OperationTimedOut, RequestExecutionException)

# Column lists from the record's fields (domain.records): the table names the id job_id, and
# splits scheduled_at into a millisecond timestamp and the microseconds below it.
_KEY_FIELDS = ("id", "tenant_id", "task_id", "scheduled_at")
_VALUE_FIELDS = tuple(name for name in STORED_FIELDS if name not in _KEY_FIELDS)
_TIME_FIELDS = frozenset({"started_at", "finished_at"})
_RECORD_COLUMNS = ", ".join(["job_id" if name == "id" else name for name in STORED_FIELDS] + ["scheduled_at_micros"])
_INSERT_COLUMNS = ("tenant_id", "task_id", "bucket", "scheduled_at", "job_id", "scheduled_at_micros", *_VALUE_FIELDS)

INSERT_HISTORY = (
    f"INSERT INTO job_history ({', '.join(_INSERT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_INSERT_COLUMNS))}) USING TTL ?"
)
INSERT_BY_ID = "INSERT INTO job_by_id (tenant_id, job_id, task_id, scheduled_at) VALUES (?, ?, ?, ?) USING TTL ?"
SELECT_BY_ID = "SELECT task_id, scheduled_at FROM job_by_id WHERE tenant_id = ? AND job_id = ?"
SELECT_ONE = (
    f"SELECT {_RECORD_COLUMNS} FROM job_history "
    "WHERE tenant_id = ? AND task_id = ? AND bucket = ? AND scheduled_at = ? AND job_id = ?"
)
SELECT_PAGE_BEFORE = (
    f"SELECT {_RECORD_COLUMNS} FROM job_history "
    "WHERE tenant_id = ? AND task_id = ? AND bucket = ? AND (scheduled_at, job_id) < (?, ?) LIMIT ?"
)
SELECT_PAGE_ALL = (
    f"SELECT {_RECORD_COLUMNS} FROM job_history WHERE tenant_id = ? AND task_id = ? AND bucket = ? LIMIT ?"
)
STATEMENTS = {
    "insert_history": INSERT_HISTORY,
    "insert_by_id": INSERT_BY_ID,
    "select_by_id": SELECT_BY_ID,
    "select_one": SELECT_ONE,
    "select_page_before": SELECT_PAGE_BEFORE,
    "select_page_all": SELECT_PAGE_ALL,
}


def schema_statements(*, keyspace: str, ttl_seconds: int, replication: dict[str, object]) -> list[str]:
    """The CQL that creates the keyspace and both tables (idempotent), and sets their TTL."""
    options = ", ".join(f"'{key}': {value!r}" for key, value in replication.items())
    return [
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {{{options}}}",
        f"""CREATE TABLE IF NOT EXISTS {keyspace}.job_history (
    tenant_id text,
    task_id uuid,
    bucket int,
    scheduled_at timestamp,
    job_id uuid,
    scheduled_at_micros int,
    status text,
    attempt int,
    max_attempts int,
    priority int,
    request_method text,
    request_url text,
    http_status int,
    error text,
    response_body text,
    started_at timestamp,
    finished_at timestamp,
    attempts text,
    labels text,
    PRIMARY KEY ((tenant_id, task_id, bucket), scheduled_at, job_id)
) WITH CLUSTERING ORDER BY (scheduled_at DESC, job_id DESC)
  AND default_time_to_live = {ttl_seconds}
  AND compaction = {{'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'DAYS', \
'compaction_window_size': '1'}}""",
        f"""CREATE TABLE IF NOT EXISTS {keyspace}.job_by_id (
    tenant_id text,
    job_id uuid,
    task_id uuid,
    scheduled_at timestamp,
    PRIMARY KEY ((tenant_id, job_id))
) WITH default_time_to_live = {ttl_seconds}""",
        # A table made before the attempt log lacks its column (Cassandra 4.1+: ADD IF NOT EXISTS).
        f"ALTER TABLE {keyspace}.job_history ADD IF NOT EXISTS attempts text",
        f"ALTER TABLE {keyspace}.job_history ADD IF NOT EXISTS labels text",
        # IF NOT EXISTS keeps an older TTL: set it on every sync so the setting wins.
        f"ALTER TABLE {keyspace}.job_history WITH default_time_to_live = {ttl_seconds}",
        f"ALTER TABLE {keyspace}.job_by_id WITH default_time_to_live = {ttl_seconds}",
    ]


# --- bucket maths: a bucket is the UTC month of scheduled_at, as yyyymm ---


def bucket_of(moment: dt.datetime) -> int:
    utc = moment.astimezone(dt.UTC) if moment.tzinfo else moment
    return utc.year * 100 + utc.month


def previous_bucket(bucket: int) -> int:
    year, month = divmod(bucket, 100)
    return (year - 1) * 100 + 12 if month == 1 else bucket - 1


def buckets_newest_first(newest: int, oldest: int) -> Iterator[int]:
    bucket = newest
    while bucket >= oldest:
        yield bucket
        bucket = previous_bucket(bucket)


# --- values ---


def _unset_if_none(value: object) -> object:
    """An empty column stays unset: binding None would write a tombstone."""
    return UNSET_VALUE if value is None else value


def _micros_below_millis(moment: dt.datetime) -> int:
    return moment.microsecond % 1000


def history_values(record: JobRecord, ttl_seconds: int) -> tuple:
    """The values INSERT_HISTORY binds for `record`, in order."""
    micros = _micros_below_millis(record.scheduled_at)
    key = (
        record.tenant_id,
        record.task_id,
        bucket_of(record.scheduled_at),
        truncate_to_millis(record.scheduled_at),
        record.id,
        micros or UNSET_VALUE,
    )
    values = []
    for name in _VALUE_FIELDS:
        value = getattr(record, name)
        values.append(_unset_if_none(truncate_to_millis(value) if name in _TIME_FIELDS else value))
    return (*key, *values, ttl_seconds)


def by_id_values(record: JobRecord, ttl_seconds: int) -> tuple:
    """The values INSERT_BY_ID binds for `record`, in order."""
    return (record.tenant_id, record.id, record.task_id, truncate_to_millis(record.scheduled_at), ttl_seconds)


@overload
def _aware(value: dt.datetime) -> dt.datetime: ...
@overload
def _aware(value: None) -> None: ...
def _aware(value: dt.datetime | None) -> dt.datetime | None:
    """The driver returns naive UTC datetimes."""
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def record_from_row(row: Any) -> JobRecord:
    """A record from a row selected with `_RECORD_COLUMNS`."""
    values = {name: getattr(row, "job_id" if name == "id" else name) for name in STORED_FIELDS}
    values["scheduled_at"] = _aware(row.scheduled_at) + dt.timedelta(microseconds=row.scheduled_at_micros or 0)
    for name in _TIME_FIELDS:
        values[name] = _aware(values[name])
    return JobRecord(**values)


def contact_points(hosts: list[str]) -> tuple[list[str], int]:
    """Split CASSANDRA_HOSTS entries ("host" or "host:port"; IPv6 without a port) into names and one port."""
    names, ports = [], set()
    for host in hosts:
        name, port = host.rsplit(":", 1) if host.count(":") == 1 else (host, "9042")
        names.append(name)
        ports.add(int(port))
    if len(ports) != 1:
        raise ValueError("CASSANDRA_HOSTS: give at least one contact point, all on the same port")
    return names, ports.pop()


# After a node went away the driver retries it at growing intervals; the default grows to
# 10 minutes, so the archiver could sit idle long after the node is back. Cap it at 10 s.
RECONNECT_BASE_SECONDS = 0.5
RECONNECT_MAX_SECONDS = 10.0


def connect(*, hosts: list[str], keyspace: str | None, local_dc: str | None = None) -> Any:
    """A driver session on `hosts`, in `keyspace` when given, routing to replicas of the local datacenter."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, TokenAwarePolicy

    names, port = contact_points(hosts)
    local_dc = settings.CASSANDRA_LOCAL_DC if local_dc is None else local_dc
    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=local_dc or None)),
        request_timeout=settings.CASSANDRA_REQUEST_TIMEOUT_SECONDS,
    )
    cluster = Cluster(
        contact_points=names,
        port=port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        reconnection_policy=ExponentialReconnectionPolicy(RECONNECT_BASE_SECONDS, RECONNECT_MAX_SECONDS),
        connect_timeout=5,
    )
    try:
        return cluster.connect(keyspace)
    except BaseException:
        cluster.shutdown()  # a failed connect keeps its threads otherwise; the next call builds a new one
        raise


class CassandraHistoryStore(HistoryStore):
    """The port on a driver session (built lazily from CASSANDRA_HOSTS, or injected by tests)."""

    def __init__(
        self,
        *,
        session: Any = None,
        hosts: list[str] | None = None,
        keyspace: str | None = None,
        ttl_seconds: int | None = None,
        lookback_seconds: int | None = None,
        concurrency: int = MAX_IN_FLIGHT,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self._session = session
        self.hosts = hosts if hosts is not None else list(settings.CASSANDRA_HOSTS)
        self.keyspace = keyspace or settings.CASSANDRA_KEYSPACE
        self.ttl_seconds = ttl_seconds or settings.HISTORY_TTL_SECONDS
        # How far back a page looks for older buckets: a row lives up to its TTL after the
        # archiver wrote it, which is up to ARCHIVE_DEAD_AFTER_SECONDS after the job
        # finished, plus a month for retries and archiver lag. Older rows stay readable by id.
        self.lookback = dt.timedelta(
            seconds=lookback_seconds or self.ttl_seconds + settings.ARCHIVE_DEAD_AFTER_SECONDS + 31 * 24 * 3600
        )
        self.concurrency = min(concurrency, MAX_IN_FLIGHT)
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.consistency_level = ConsistencyLevel.name_to_value[settings.CASSANDRA_CONSISTENCY]
        self._prepared: dict[str, Any] = {}  # STATEMENTS' names → prepared statements
        self._lock = threading.Lock()

    # --- connection ---

    def _statements(self) -> tuple[Any, dict[str, Any]]:
        with self._lock:
            if self._session is None:
                self._session = connect(hosts=self.hosts, keyspace=self.keyspace)
            if not self._prepared:
                prepared = {name: self._session.prepare(cql) for name, cql in STATEMENTS.items()}
                for statement in prepared.values():
                    # A quorum write then a quorum read overlap: the archiver deletes from
                    # MySQL only after the row is readable by the next history request.
                    statement.consistency_level = self.consistency_level
                self._prepared = prepared  # all or nothing: a failed prepare is retried whole next call
            return self._session, self._prepared

    def _call(self, operation: Callable[[], object]):
        try:
            return operation()
        except UNAVAILABLE_ERRORS as exc:
            raise HistoryUnavailable(f"Cassandra history store: {exc!r}") from exc

    # --- the port ---

    def write_many(self, records: Iterable[JobRecord]) -> None:
        records = list(records)
        if not records:
            return

        def write() -> None:
            session, prepared = self._statements()

            def statements():
                for record in records:
                    yield prepared["insert_history"], history_values(record, self.ttl_seconds)
                    yield prepared["insert_by_id"], by_id_values(record, self.ttl_seconds)

            # One INSERT per row and table, at most `concurrency` in flight; never a BATCH.
            self._execute_bounded(session, statements())

        self._call(write)

    def _execute_bounded(self, session: Any, statements: Iterable[tuple[Any, tuple]]) -> None:
        """Run every statement with at most `concurrency` in flight; raise the first error.

        Not cassandra.concurrent.execute_concurrent: it sends with timeout=None, so one
        request lost by a node would hang the archiver. Here each keeps the session's timeout.
        """
        slots = threading.BoundedSemaphore(self.concurrency)
        failed = threading.Event()
        futures = []

        def done(_result: object) -> None:
            slots.release()

        def error(_exc: BaseException) -> None:
            failed.set()
            slots.release()

        for statement, values in statements:
            slots.acquire()
            if failed.is_set():  # stop sending; the error is raised below
                slots.release()
                break
            future = session.execute_async(statement, values)
            future.add_callbacks(done, error)
            futures.append(future)
        for future in futures:
            future.result()  # re-raises a failed statement's error

    def get(self, tenant_id: str, job_id: uuid.UUID) -> JobRecord | None:
        def read() -> JobRecord | None:
            session, prepared = self._statements()
            where = session.execute(prepared["select_by_id"], (tenant_id, job_id)).one()
            if where is None:
                return None
            scheduled_at = _aware(where.scheduled_at)
            row = session.execute(
                prepared["select_one"], (tenant_id, where.task_id, bucket_of(scheduled_at), scheduled_at, job_id)
            ).one()
            return None if row is None else record_from_row(row)

        return self._call(read)

    def page(self, tenant_id: str, task_id: uuid.UUID, cursor: Position | None, limit: int) -> list[JobRecord]:
        def read() -> list[JobRecord]:
            session, prepared = self._statements()
            found: list[JobRecord] = []
            for statement, params in self.page_reads(tenant_id, task_id, cursor):
                if len(found) >= limit:
                    break
                rows = session.execute(prepared[statement], (*params, limit - len(found)))
                found.extend(record_from_row(row) for row in rows)
            return found

        return self._call(read)

    def page_reads(self, tenant_id: str, task_id: uuid.UUID, cursor: Position | None) -> Iterator[tuple[str, tuple]]:
        """The reads a page makes (statement name, values without the LIMIT), newest bucket first.

        The cursor's own bucket is read from the cursor on; every older bucket whole,
        back to the lookback horizon. A page stops as soon as it has `limit` rows.
        """
        now = self.clock()
        newest = bucket_of(now + dt.timedelta(days=1))  # a job claimed just before midnight of a month's end
        oldest = bucket_of(now - self.lookback)
        cursor_bucket = bucket_of(cursor.scheduled_at) if cursor is not None else None
        if cursor_bucket is not None:
            newest = min(newest, cursor_bucket)
        for bucket in buckets_newest_first(newest, oldest):
            if cursor is not None and bucket == cursor_bucket:
                position = (truncate_to_millis(cursor.scheduled_at), cursor.job_id)
                yield "select_page_before", (tenant_id, task_id, bucket, *position)
            else:
                yield "select_page_all", (tenant_id, task_id, bucket)

    def close(self) -> None:
        with self._lock:
            if self._session is not None and hasattr(self._session, "cluster"):
                self._session.cluster.shutdown()
            self._session = None
            self._prepared = {}
