"""The history port's contract: every adapter (see conftest `history_store`) passes it."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from domain.ids import new_id
from history.base import Position
from tests.history.conftest import make_record

# The SQL adapter needs the database; the others ignore it.
pytestmark = pytest.mark.django_db

NOW = dt.datetime.now(dt.UTC)


def walk(store, tenant_id, task_id, limit):
    """Every page of a task's history, following the last record's position as the cursor."""
    pages, cursor = [], None
    while True:
        page = store.page(tenant_id, task_id, cursor, limit)
        assert len(page) <= limit
        if not page:
            return pages
        pages.append(page)
        cursor = page[-1].position


def test_a_written_record_reads_back_equal_by_tenant_and_id(history_store):
    record = make_record(scheduled_at=NOW.replace(microsecond=654321) - dt.timedelta(minutes=3))

    history_store.write_many([record])

    assert history_store.get(record.tenant_id, record.id) == record


def test_empty_columns_read_back_as_none(history_store):
    record = make_record(
        status="dead", http_status=None, error="connection refused", response_body=None, started_at=None
    )

    history_store.write_many([record])

    assert history_store.get(record.tenant_id, record.id) == record


def test_another_tenant_reads_nothing(history_store):
    record = make_record()
    history_store.write_many([record])

    assert history_store.get("someone-else", record.id) is None
    assert history_store.page("someone-else", record.task_id, None, 10) == []


def test_an_unknown_job_is_none(history_store):
    assert history_store.get("tenant-a", new_id()) is None


def test_writing_a_record_again_is_an_upsert_not_a_duplicate(history_store):
    record = make_record(status="dead", attempt=3, error="HTTP 500", http_status=500)
    history_store.write_many([record])
    again = dataclasses.replace(record, attempt=4, http_status=503, error="HTTP 503")

    history_store.write_many([again])
    history_store.write_many([again])

    assert history_store.get(record.tenant_id, record.id) == again
    assert history_store.page(record.tenant_id, record.task_id, None, 10) == [again]


def test_writing_nothing_is_a_no_op(history_store):
    history_store.write_many([])


def test_a_page_is_newest_first_and_bounded_by_limit(history_store):
    first = make_record()
    task = dict(tenant_id=first.tenant_id, task_id=first.task_id)
    records = [first] + [make_record(**task, scheduled_at=NOW - dt.timedelta(minutes=m)) for m in (7, 1, 30, 2)]
    history_store.write_many(records)

    page = history_store.page(first.tenant_id, first.task_id, None, 3)

    expected = sorted(records, key=lambda r: r.scheduled_at, reverse=True)[:3]
    assert page == expected


def test_equal_times_are_ordered_by_job_id_descending(history_store):
    at = NOW.replace(microsecond=0) - dt.timedelta(hours=1)
    first = make_record(scheduled_at=at)
    second = make_record(tenant_id=first.tenant_id, task_id=first.task_id, scheduled_at=at)
    history_store.write_many([first, second])

    page = history_store.page(first.tenant_id, first.task_id, None, 10)

    assert [r.id for r in page] == sorted([first.id, second.id], reverse=True)
    assert history_store.page(first.tenant_id, first.task_id, page[0].position, 10) == page[1:]


def test_a_page_holds_only_its_task(history_store):
    mine = make_record()
    other_task = make_record(tenant_id=mine.tenant_id)
    history_store.write_many([mine, other_task])

    assert history_store.page(mine.tenant_id, mine.task_id, None, 10) == [mine]


def test_following_cursors_visits_every_record_once_in_order_across_months(history_store):
    first = make_record(scheduled_at=NOW - dt.timedelta(hours=1))
    task = dict(tenant_id=first.tenant_id, task_id=first.task_id)
    # 38 days back always crosses at least one UTC month boundary.
    ages = [dt.timedelta(days=d, minutes=m) for d in (0, 1, 9, 20, 31, 38) for m in (3, 17)]
    records = [first] + [make_record(**task, scheduled_at=NOW - age) for age in ages]
    history_store.write_many(records)
    expected = sorted(records, key=lambda r: (r.scheduled_at, r.id), reverse=True)

    for limit in (1, 2, 5, 13, 50):
        pages = walk(history_store, first.tenant_id, first.task_id, limit)
        assert [r for page in pages for r in page] == expected, f"limit {limit}"


def test_a_cursor_between_records_resumes_at_the_next_older_one(history_store):
    first = make_record(scheduled_at=NOW - dt.timedelta(minutes=10))
    older = make_record(tenant_id=first.tenant_id, task_id=first.task_id, scheduled_at=NOW - dt.timedelta(minutes=20))
    history_store.write_many([first, older])

    cursor = Position(NOW - dt.timedelta(minutes=15), new_id())

    assert history_store.page(first.tenant_id, first.task_id, cursor, 10) == [older]


def test_many_records_written_at_once_are_all_stored(history_store):
    first = make_record()
    task = dict(tenant_id=first.tenant_id, task_id=first.task_id)
    records = [first] + [make_record(**task, scheduled_at=NOW - dt.timedelta(minutes=i)) for i in range(1, 300)]

    history_store.write_many(records)

    assert len(history_store.page(first.tenant_id, first.task_id, None, 1000)) == 300
    assert all(history_store.get(r.tenant_id, r.id) == r for r in records[::37])


def test_a_skipped_run_reads_back_with_its_reason_and_no_call(history_store):
    record = make_record(
        status="skipped", error="overlap:skip", http_status=None, response_body=None, started_at=None, attempt=0
    )

    history_store.write_many([record])

    assert history_store.get(record.tenant_id, record.id) == record
    assert history_store.page(record.tenant_id, record.task_id, None, 10) == [record]
