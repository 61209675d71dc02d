"""The Cassandra adapter on the real node: what only a server can show (TTL, unset cells, DDL, no node)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import re
import uuid

import pytest
from cassandra.query import SimpleStatement
from django.core.management import call_command

from history.base import HistoryUnavailable
from history.cassandra_store import CassandraHistoryStore, bucket_of, connect
from tests.cassandra_node import hosts, needs_cassandra
from tests.history.conftest import make_record
from tests.receivers import unused_port

pytestmark = [pytest.mark.cassandra, needs_cassandra]

TTL = 3600  # the test keyspace's tables (tests/conftest.py cassandra_session)


@pytest.fixture
def store(cassandra_session):
    return CassandraHistoryStore(session=cassandra_session, ttl_seconds=TTL)


def _history_cells(session, record, *columns):
    where = "tenant_id = %s AND task_id = %s AND bucket = %s AND scheduled_at = %s AND job_id = %s"
    key = (record.tenant_id, record.task_id, bucket_of(record.scheduled_at), record.scheduled_at, record.id)
    return session.execute(f"SELECT {', '.join(columns)} FROM job_history WHERE {where}", key).one()


def test_every_written_row_carries_the_ttl_in_both_tables(store, cassandra_session):
    record = make_record(error="HTTP 500", http_status=500)

    store.write_many([record])

    cells = _history_cells(cassandra_session, record, "TTL(status)", "TTL(error)", "TTL(finished_at)")
    assert all(TTL - 60 < ttl <= TTL for ttl in cells), cells
    (by_id_ttl,) = cassandra_session.execute(
        "SELECT TTL(task_id) FROM job_by_id WHERE tenant_id = %s AND job_id = %s", (record.tenant_id, record.id)
    ).one()
    assert TTL - 60 < by_id_ttl <= TTL


def _tombstone_cells_read(session, cql, values):
    """The tombstone cells the server read to answer `cql` (from its query trace)."""
    trace = session.execute(SimpleStatement(cql), values, trace=True).get_query_trace(max_wait_sec=10)
    counts = [re.search(r"and (\d+) tombstone cells", event.description) for event in trace.events]
    found = [int(match.group(1)) for match in counts if match]
    assert found, [event.description for event in trace.events]
    return sum(found)


def test_empty_columns_are_never_written_not_even_as_null(store, cassandra_session):
    record = make_record(http_status=None, error=None, response_body=None, started_at=None)
    record = dataclasses.replace(record, scheduled_at=record.scheduled_at.replace(microsecond=250000))

    store.write_many([record])

    select = "SELECT * FROM job_history WHERE tenant_id = %s AND task_id = %s AND bucket = %s"
    partition = (record.tenant_id, record.task_id, bucket_of(record.scheduled_at))
    # A column bound null is a tombstone cell every read of the row must skip; unset writes nothing.
    assert _tombstone_cells_read(cassandra_session, select, partition) == 0
    cells = _history_cells(cassandra_session, record, "WRITETIME(http_status)", "WRITETIME(status)")
    assert cells[0] is None and cells[1] is not None


def test_the_tombstone_probe_sees_a_null_write(cassandra_session):
    """The probe above can fail: a row written with a null column shows one tombstone cell."""
    record = make_record()
    insert = cassandra_session.prepare(
        "INSERT INTO job_history (tenant_id, task_id, bucket, scheduled_at, job_id, error) VALUES (?, ?, ?, ?, ?, ?)"
    )
    partition = (record.tenant_id, record.task_id, bucket_of(record.scheduled_at))
    cassandra_session.execute(insert, (*partition, record.scheduled_at, record.id, None))

    select = "SELECT * FROM job_history WHERE tenant_id = %s AND task_id = %s AND bucket = %s"
    assert _tombstone_cells_read(cassandra_session, select, partition) == 1


def test_a_rewrite_with_an_empty_column_keeps_the_earlier_cell(store, cassandra_session):
    record = make_record(status="dead", error="HTTP 500", http_status=500)
    store.write_many([record])

    store.write_many([dataclasses.replace(record, error=None)])

    assert store.get(record.tenant_id, record.id).error == "HTTP 500"


def test_a_thousand_records_in_one_write_are_all_readable(store):
    first = make_record()
    task = dict(tenant_id=first.tenant_id, task_id=first.task_id)
    records = [first] + [
        make_record(**task, scheduled_at=first.scheduled_at - dt.timedelta(minutes=i)) for i in range(1, 1000)
    ]

    store.write_many(records)

    assert store.page(first.tenant_id, first.task_id, None, 1000) == sorted(
        records, key=lambda r: r.scheduled_at, reverse=True
    )


def test_no_node_listening_is_history_unavailable_for_every_operation():
    store = CassandraHistoryStore(hosts=[f"127.0.0.1:{unused_port()}"], keyspace="jobsched_test", ttl_seconds=TTL)
    record = make_record()
    try:
        with pytest.raises(HistoryUnavailable):
            store.write_many([record])
        with pytest.raises(HistoryUnavailable):
            store.get(record.tenant_id, record.id)
        with pytest.raises(HistoryUnavailable):
            store.page(record.tenant_id, record.task_id, None, 10)
    finally:
        store.close()


def test_sync_history_schema_creates_the_tables_the_design_names_and_resyncs_the_ttl(settings):
    keyspace = f"jobsched_sync_{uuid.uuid4().hex[:8]}"
    settings.CASSANDRA_HOSTS = hosts()
    settings.CASSANDRA_KEYSPACE = keyspace
    settings.HISTORY_TTL_SECONDS = 86400
    session = connect(hosts=hosts(), keyspace=None)
    try:
        call_command("sync_history_schema", stdout=io.StringIO())
        settings.HISTORY_TTL_SECONDS = 7200
        call_command("sync_history_schema", stdout=io.StringIO())  # idempotent, and the new TTL wins

        tables = {
            row.table_name: row
            for row in session.execute(
                "SELECT table_name, default_time_to_live, compaction FROM system_schema.tables "
                "WHERE keyspace_name = %s",
                (keyspace,),
            )
        }
        assert set(tables) == {"job_history", "job_by_id"}
        assert {t.default_time_to_live for t in tables.values()} == {7200}
        assert tables["job_history"].compaction["class"].endswith("TimeWindowCompactionStrategy")
        columns = {
            row.column_name: (row.kind, row.clustering_order)
            for row in session.execute(
                "SELECT column_name, kind, clustering_order FROM system_schema.columns "
                "WHERE keyspace_name = %s AND table_name = 'job_history'",
                (keyspace,),
            )
        }
        assert {name for name, (kind, _) in columns.items() if kind == "partition_key"} == {
            "tenant_id",
            "task_id",
            "bucket",
        }
        assert columns["scheduled_at"] == ("clustering", "desc")
        assert columns["job_id"] == ("clustering", "desc")
        (strategy,) = session.execute(
            "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (keyspace,)
        ).one()
        assert strategy["class"].endswith("SimpleStrategy") and strategy["replication_factor"] == "1"
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        session.cluster.shutdown()
