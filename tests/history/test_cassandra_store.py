"""The Cassandra adapter without a server: the CQL it sends, the values it binds, bucket maths, the bound.

Only what a real node cannot show stays on the fake session (README, "What runs against
Cassandra"); everything else runs on the node in test_cassandra_node.py and the contract suite.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

import pytest
from cassandra import ConsistencyLevel, WriteTimeout
from cassandra.query import UNSET_VALUE

from domain.ids import new_id
from history import cassandra_store as cs
from history.base import HistoryUnavailable, Position
from history.cassandra_store import CassandraHistoryStore
from tests.history.conftest import make_record
from tests.history.fake_cassandra import FakeCassandraSession

UTC = dt.UTC


def store_with(session, **kwargs):
    return CassandraHistoryStore(session=session, ttl_seconds=2592000, **kwargs)


def fixed_clock(moment):
    return lambda: moment


# --- the statements ---


def test_no_statement_is_a_batch_and_every_insert_carries_the_ttl():
    for cql in cs.STATEMENTS.values():
        assert "BATCH" not in cql.upper()
    assert cs.INSERT_HISTORY.endswith("USING TTL ?")
    assert cs.INSERT_BY_ID.endswith("USING TTL ?")


@pytest.mark.parametrize("cql", [cs.INSERT_HISTORY, cs.INSERT_BY_ID])
def test_each_insert_has_one_placeholder_per_column_plus_the_ttl(cql):
    columns = re.search(r"\(([^)]*)\) VALUES", cql).group(1).split(",")
    assert cql.count("?") == len(columns) + 1


def test_reads_always_name_the_whole_partition_key_including_the_tenant():
    for cql in (cs.SELECT_ONE, cs.SELECT_PAGE_BEFORE, cs.SELECT_PAGE_ALL):
        assert "tenant_id = ? AND task_id = ? AND bucket = ?" in cql
    assert "tenant_id = ? AND job_id = ?" in cs.SELECT_BY_ID
    for cql in cs.STATEMENTS.values():
        assert "ALLOW FILTERING" not in cql


def test_the_schema_matches_the_design():
    statements = cs.schema_statements(
        keyspace="jobsched", ttl_seconds=2592000, replication={"class": "SimpleStrategy", "replication_factor": 3}
    )
    text = "\n".join(statements)
    assert "CREATE KEYSPACE IF NOT EXISTS jobsched WITH replication = {'class': 'SimpleStrategy', " in text
    assert "'replication_factor': 3}" in text
    assert "PRIMARY KEY ((tenant_id, task_id, bucket), scheduled_at, job_id)" in text
    assert "CLUSTERING ORDER BY (scheduled_at DESC, job_id DESC)" in text
    assert "PRIMARY KEY ((tenant_id, job_id))" in text
    assert "tenant_id text" in text and "job_id uuid" in text and "bucket int" in text
    assert text.count("default_time_to_live = 2592000") == 4  # both tables, created and altered


def test_every_statement_is_prepared_once_at_local_quorum():
    session = FakeCassandraSession()
    store = store_with(session)

    store.get("tenant-a", new_id())
    store.page("tenant-a", new_id(), None, 10)
    store.write_many([make_record()])

    assert sorted(p.query_string for p in session.prepared) == sorted(cs.STATEMENTS.values())
    assert {p.consistency_level for p in session.prepared} == {ConsistencyLevel.LOCAL_QUORUM}


# --- the values ---


def test_a_full_record_binds_every_value_and_the_ttl():
    record = make_record(
        scheduled_at=dt.datetime(2026, 10, 31, 23, 59, 59, 987654, tzinfo=UTC), status="dead", error="HTTP 500"
    )

    values = cs.history_values(record, 2592000)

    assert values[:6] == (
        record.tenant_id,
        record.task_id,
        202610,
        dt.datetime(2026, 10, 31, 23, 59, 59, 987000, tzinfo=UTC),
        record.id,
        654,
    )
    assert values[-1] == 2592000
    assert UNSET_VALUE not in values and None not in values


def test_empty_columns_are_bound_unset_never_null():
    record = make_record(
        scheduled_at=dt.datetime(2026, 11, 2, 8, 0, tzinfo=UTC),
        http_status=None,
        error=None,
        response_body=None,
        started_at=None,
    )

    values = cs.history_values(record, 60)

    assert None not in values
    names = re.search(r"\(([^)]*)\) VALUES", cs.INSERT_HISTORY).group(1).replace(" ", "").split(",")
    unset = {name for name, value in zip(names, values, strict=False) if value is UNSET_VALUE}
    assert unset == {"scheduled_at_micros", "http_status", "error", "response_body", "started_at"}


def test_the_session_receives_unset_for_empty_columns_and_a_later_write_keeps_earlier_cells():
    session = FakeCassandraSession()
    store = store_with(session)
    record = make_record(status="dead", error="HTTP 500", http_status=500)
    store.write_many([record])

    store.write_many([dataclasses.replace(record, status="succeeded", error=None, http_status=200)])

    (first, second) = session.statements_named(cs.INSERT_HISTORY)
    assert first[13] == "HTTP 500" and second[13] is UNSET_VALUE
    # The cost of writing no tombstones: a cell left unset keeps its earlier value.
    assert store.get(record.tenant_id, record.id).error == "HTTP 500"


def test_by_id_row_says_where_the_job_lives():
    record = make_record(scheduled_at=dt.datetime(2026, 11, 2, 8, 0, 0, 1500, tzinfo=UTC))

    assert cs.by_id_values(record, 60) == (
        record.tenant_id,
        record.id,
        record.task_id,
        dt.datetime(2026, 11, 2, 8, 0, 0, 1000, tzinfo=UTC),
        60,
    )


# --- bucket maths ---


@pytest.mark.parametrize(
    ("moment", "bucket"),
    [
        (dt.datetime(2026, 10, 1, 0, 0, tzinfo=UTC), 202610),
        (dt.datetime(2026, 10, 31, 23, 59, 59, 999999, tzinfo=UTC), 202610),
        (dt.datetime(2026, 12, 31, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-1))), 202701),  # UTC decides
        (dt.datetime(2027, 1, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))), 202612),
    ],
)
def test_the_bucket_is_the_utc_month_of_scheduled_at(moment, bucket):
    assert cs.bucket_of(moment) == bucket


def test_the_bucket_before_january_is_last_years_december():
    assert cs.previous_bucket(202701) == 202612
    assert cs.previous_bucket(202612) == 202611
    assert list(cs.buckets_newest_first(202702, 202611)) == [202702, 202701, 202612, 202611]


def test_a_first_page_reads_from_tomorrows_month_back_to_the_lookback_horizon():
    now = dt.datetime(2026, 12, 31, 12, 0, tzinfo=UTC)
    store = store_with(FakeCassandraSession(), lookback_seconds=70 * 24 * 3600, clock=fixed_clock(now))
    task = new_id()

    reads = list(store.page_reads("tenant-a", task, None))

    assert reads == [
        ("select_page_all", ("tenant-a", task, 202701)),
        ("select_page_all", ("tenant-a", task, 202612)),
        ("select_page_all", ("tenant-a", task, 202611)),
        ("select_page_all", ("tenant-a", task, 202610)),
    ]


def test_a_cursor_page_starts_in_the_cursors_month_from_its_position_then_reads_older_months_whole():
    now = dt.datetime(2026, 12, 15, tzinfo=UTC)
    store = store_with(FakeCassandraSession(), lookback_seconds=40 * 24 * 3600, clock=fixed_clock(now))
    task, job = new_id(), new_id()
    cursor = Position(dt.datetime(2026, 11, 3, 4, 5, 6, 789123, tzinfo=UTC), job)

    reads = list(store.page_reads("tenant-a", task, cursor))

    assert reads == [
        ("select_page_before", ("tenant-a", task, 202611, dt.datetime(2026, 11, 3, 4, 5, 6, 789000, tzinfo=UTC), job)),
    ]


def test_a_page_stops_reading_buckets_once_it_is_full():
    now = dt.datetime(2026, 12, 5, tzinfo=UTC)
    session = FakeCassandraSession()
    store = store_with(session, clock=fixed_clock(now))
    first = make_record(scheduled_at=dt.datetime(2026, 12, 1, 1, tzinfo=UTC))
    task = dict(tenant_id=first.tenant_id, task_id=first.task_id)
    store.write_many([first, make_record(**task, scheduled_at=dt.datetime(2026, 11, 30, 23, tzinfo=UTC))])
    session.executed.clear()

    assert store.page(first.tenant_id, first.task_id, None, 1) == [first]
    assert [values[2] for _cql, values in session.executed] == [202612]  # December only, LIMIT 1
    assert session.executed[0][1][-1] == 1

    session.executed.clear()
    page = store.page(first.tenant_id, first.task_id, None, 2)
    assert [r.scheduled_at.month for r in page] == [12, 11]
    assert [values[2:] for _cql, values in session.executed] == [(202612, 2), (202611, 1)]


def test_a_page_crossing_a_year_reads_december_after_january():
    now = dt.datetime(2027, 1, 10, tzinfo=UTC)
    store = store_with(FakeCassandraSession(), clock=fixed_clock(now))
    first = make_record(scheduled_at=dt.datetime(2027, 1, 1, 0, 0, tzinfo=UTC))
    older = make_record(
        tenant_id=first.tenant_id, task_id=first.task_id, scheduled_at=dt.datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    )
    store.write_many([older, first])

    assert store.page(first.tenant_id, first.task_id, None, 10) == [first, older]
    assert store.page(first.tenant_id, first.task_id, first.position, 10) == [older]


def test_a_record_older_than_the_lookback_is_not_listed_but_still_readable_by_id():
    now = dt.datetime(2026, 12, 5, tzinfo=UTC)
    store = store_with(FakeCassandraSession(), lookback_seconds=31 * 24 * 3600, clock=fixed_clock(now))
    ancient = make_record(scheduled_at=dt.datetime(2026, 9, 1, tzinfo=UTC))
    store.write_many([ancient])

    assert store.page(ancient.tenant_id, ancient.task_id, None, 10) == []
    assert store.get(ancient.tenant_id, ancient.id) == ancient


# --- parallel writes ---


def test_writes_run_in_parallel_with_at_most_64_in_flight():
    session = FakeCassandraSession(hold_until_in_flight=64)
    store = store_with(session)
    records = [make_record() for _ in range(300)]

    store.write_many(records)

    assert session.max_in_flight == 64  # parallel, and bounded
    assert len(session.statements_named(cs.INSERT_HISTORY)) == 300
    assert len(session.statements_named(cs.INSERT_BY_ID)) == 300
    assert session.in_flight == 0


def test_a_larger_concurrency_is_capped_at_64():
    session = FakeCassandraSession(hold_until_in_flight=500)
    store = store_with(session, concurrency=500)

    store.write_many([make_record() for _ in range(200)])

    assert session.max_in_flight == 64


def test_a_failed_insert_fails_the_whole_write():
    session = FakeCassandraSession()
    store = store_with(session)
    records = [make_record() for _ in range(10)]
    doomed = records[6].id

    def timeout_on_doomed(cql, values):
        if doomed in values:
            return WriteTimeout("replica did not answer", consistency=ConsistencyLevel.LOCAL_QUORUM, write_type=0)
        return None

    session.fail_when = timeout_on_doomed

    with pytest.raises(HistoryUnavailable, match="WriteTimeout"):
        store.write_many(records)


# An unreachable cluster: on the real driver, tests/history/test_cassandra_node.py.


@pytest.mark.parametrize(
    ("hosts", "expected"),
    [
        (["10.0.0.5"], (["10.0.0.5"], 9042)),
        (["a.example:9142", "b.example:9142"], (["a.example", "b.example"], 9142)),
        (["fd00::5"], (["fd00::5"], 9042)),
    ],
)
def test_contact_points_come_from_cassandra_hosts(hosts, expected):
    assert cs.contact_points(hosts) == expected


@pytest.mark.parametrize("hosts", [[], ["a:9042", "b:9043"]])
def test_no_contact_point_or_mixed_ports_are_refused(hosts):
    with pytest.raises(ValueError, match="CASSANDRA_HOSTS"):
        cs.contact_points(hosts)
