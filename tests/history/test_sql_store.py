"""The SQL history store's own duties: expiry instead of a TTL, and a bounded purge."""

from __future__ import annotations

import pytest
from django.db import connection

from history.base import HistoryUnavailable
from history.models import HistoryEntry
from history.sql_store import QUERIES, SqlHistoryStore
from tests.history.conftest import make_record

pytestmark = pytest.mark.django_db


def _expire(*records):
    with connection.cursor() as cursor:
        for record in records:
            cursor.execute(
                "UPDATE job_history SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE tenant_id = %s AND job_id = %s",
                [record.tenant_id, record.id.bytes],
            )


def test_a_record_expires_ttl_seconds_after_it_is_written():
    store = SqlHistoryStore(ttl_seconds=3600)
    record = make_record()

    store.write_many([record])

    with connection.cursor() as cursor:
        cursor.execute("SELECT TIMESTAMPDIFF(SECOND, NOW(6), expires_at) FROM job_history")
        ((seconds_left,),) = cursor.fetchall()
    assert 3590 <= seconds_left <= 3600


def test_an_expired_record_is_invisible_before_it_is_purged():
    store = SqlHistoryStore()
    record = make_record()
    store.write_many([record])

    _expire(record)

    assert store.get(record.tenant_id, record.id) is None
    assert store.page(record.tenant_id, record.task_id, None, 10) == []
    assert HistoryEntry.objects.count() == 1


def test_the_purge_deletes_only_expired_records_and_at_most_its_limit():
    store = SqlHistoryStore()
    expired = [make_record() for _ in range(3)]
    live = make_record()
    store.write_many([*expired, live])
    _expire(*expired)

    assert store.purge_expired(limit=2) == 2
    assert store.purge_expired(limit=2) == 1
    assert store.purge_expired(limit=2) == 0
    assert [e.job_id for e in HistoryEntry.objects.all()] == [live.id]


def test_rewriting_an_expired_record_revives_it_like_a_cassandra_rewrite():
    store = SqlHistoryStore()
    record = make_record()
    store.write_many([record])
    _expire(record)

    store.write_many([record])

    assert store.get(record.tenant_id, record.id) == record


def test_writes_larger_than_one_statement_are_split_and_all_stored(monkeypatch):
    monkeypatch.setattr("history.sql_store.WRITE_CHUNK", 7)
    store = SqlHistoryStore()

    store.write_many([make_record() for _ in range(20)])

    assert HistoryEntry.objects.count() == 20


def test_a_database_error_is_history_unavailable(monkeypatch):
    store = SqlHistoryStore()
    monkeypatch.setitem(QUERIES, "history_get", "SELECT * FROM job_history_missing WHERE %s AND %s")

    with pytest.raises(HistoryUnavailable):
        store.get("tenant-a", make_record().id)
