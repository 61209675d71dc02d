"""The history stores under test: every adapter gets the same contract suite.

`memory` and `sql` always run; `cassandra-fake` is the Cassandra adapter over the
unit-level fake session; `cassandra` is the adapter on the real node (tests/cassandra_node.py,
in a throwaway keyspace; `make test` starts the node, CI requires it).
"""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from domain.ids import new_id
from history.base import JobRecord
from history.cassandra_store import CassandraHistoryStore
from history.memory import InMemoryHistoryStore
from history.sql_store import SqlHistoryStore
from tests.cassandra_node import needs_cassandra
from tests.history.fake_cassandra import FakeCassandraSession


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
        "attempts": '[[1, 1796130000250, 840, "succeeded", 200, null]]',
        "labels": '{"env": "prod"}',
    }
    fields.update(overrides)
    return JobRecord(**fields)
