"""The history stores under test: every adapter gets the same contract suite.

`memory` and `sql` always run; `cassandra-fake` is the Cassandra adapter over the
unit-level fake session; `cassandra` is the adapter on a real cluster and runs
only when CASSANDRA_HOSTS is set (in a throwaway keyspace).
"""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pytest

from history.base import JobRecord
from history.cassandra_store import CassandraHistoryStore, connect, schema_statements
from history.memory import InMemoryHistoryStore
from history.sql_store import SqlHistoryStore
from jobsched_project.ids import new_id
from tests.history.fake_cassandra import FakeCassandraSession

CASSANDRA_HOSTS = [h for h in os.environ.get("CASSANDRA_HOSTS", "").split(",") if h]
TEST_KEYSPACE = os.environ.get("CASSANDRA_TEST_KEYSPACE", "jobsched_test")

needs_cassandra = pytest.mark.skipif(
    not CASSANDRA_HOSTS, reason="no Cassandra cluster: set CASSANDRA_HOSTS to run the contract on a real one"
)


@pytest.fixture(scope="session")
def cassandra_session():
    session = connect(hosts=CASSANDRA_HOSTS, keyspace=None)
    replication = {"class": "SimpleStrategy", "replication_factor": 1}
    for statement in schema_statements(keyspace=TEST_KEYSPACE, ttl_seconds=3600, replication=replication):
        session.execute(statement)
    session.set_keyspace(TEST_KEYSPACE)
    yield session
    session.execute(f"DROP KEYSPACE IF EXISTS {TEST_KEYSPACE}")
    session.cluster.shutdown()


@pytest.fixture(
    params=[
        "memory",
        "sql",
        "cassandra-fake",
        pytest.param("cassandra", marks=[pytest.mark.cassandra, needs_cassandra]),
    ]
)
def history_store(request):
    if request.param == "memory":
        yield InMemoryHistoryStore()
    elif request.param == "sql":
        yield SqlHistoryStore()  # the test module is marked django_db
    elif request.param == "cassandra-fake":
        yield CassandraHistoryStore(session=FakeCassandraSession(), ttl_seconds=3600)
    else:
        yield CassandraHistoryStore(session=request.getfixturevalue("cassandra_session"), ttl_seconds=3600)


def make_record(
    *,
    tenant_id: str | None = None,
    task_id: uuid.UUID | None = None,
    scheduled_at: dt.datetime | None = None,
    **overrides,
) -> JobRecord:
    """A finished job's record; every store's tests use fresh tenants so runs never collide."""
    finished = dt.datetime.now(dt.UTC).replace(microsecond=123000) - dt.timedelta(hours=2)
    fields = {
        "tenant_id": tenant_id or f"tenant-{uuid.uuid4().hex[:12]}",
        "task_id": task_id or new_id(),
        "id": new_id(),
        "scheduled_at": scheduled_at or finished - dt.timedelta(seconds=5),
        "status": "succeeded",
        "attempt": 1,
        "max_attempts": 5,
        "priority": 5,
        "request_method": "POST",
        "request_url": "https://example.com/hook",
        "http_status": 200,
        "error": None,
        "response_body": "ok",
        "started_at": finished - dt.timedelta(seconds=1),
        "finished_at": finished,
    }
    fields.update(overrides)
    return JobRecord(**fields)
