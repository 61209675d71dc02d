"""GET /v1/tasks/{id}/history: MySQL and the history store merged, newest first, exact cursors."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.ids import new_id
from domain.records import STORED_FIELDS
from history.base import HistoryUnavailable, JobRecord, Position
from history.sql_store import SqlHistoryStore
from history.stores import set_history_store
from jobs.models import JobStatus
from jobs.selectors import decode_cursor, encode_cursor, merge_newest_first
from tests.factories import make_job, make_task
from tests.history.conftest import make_record

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"
BASE = timezone.now().replace(microsecond=0) - dt.timedelta(days=2)


def archived(job) -> JobRecord:
    """The history copy the archiver would write of `job`: every stored field of the record, from the job's row."""
    return JobRecord(**{name: getattr(job, name) for name in STORED_FIELDS})


def walk(owner, task_id, limit):
    """Every page's results, following next_cursor until it is null."""
    pages, cursor = [], None
    for _ in range(1000):
        url = f"/v1/tasks/{task_id}/history?limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        response = owner.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert len(body["results"]) <= limit
        pages.append(body["results"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError("the cursor never ended")


# Each job: minutes before BASE (a small range, so equal times happen), and where it lives.
placements = st.lists(
    st.tuples(st.integers(min_value=0, max_value=40), st.sampled_from(["mysql", "history", "both"])),
    max_size=30,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(placements=placements, limit=st.integers(min_value=1, max_value=12), micros=st.integers(0, 999_999))
def test_history_pages_cover_both_stores_in_order_without_gaps_or_duplicates(owner, store, placements, limit, micros):
    task = make_task()  # a fresh task per example: earlier examples' rows are invisible
    expected = []  # (scheduled_at, id, archived)
    mysql_times = set()
    for minutes, where in placements:
        at = BASE - dt.timedelta(minutes=minutes, microseconds=micros)
        if where != "history" and at not in mysql_times:  # MySQL holds one job per (task, scheduled_at)
            mysql_times.add(at)
            job = make_job(task, scheduled_at=at, status=JobStatus.SUCCEEDED, attempt=1, finished_at=at)
            if where == "both":  # the archiver crashed between its two writes
                store.write_many([archived(job)])
            expected.append((at, job.id, False))
        else:
            record = make_record(tenant_id=owner.tenant_id, task_id=task.id, scheduled_at=at)
            store.write_many([record])
            expected.append((at, record.id, True))
    expected.sort(reverse=True)

    pages = walk(owner, task.id, limit)

    seen = [(dt.datetime.fromisoformat(j["scheduled_at"]), j["id"], j["archived"]) for page in pages for j in page]
    assert [(at, str(job_id), flag) for at, job_id, flag in expected] == seen
    assert all(len(page) == limit for page in pages[:-1])  # only the last page may be short


def test_a_page_of_exactly_the_remaining_jobs_has_no_next_cursor(owner, store):
    task = make_task()
    for minutes in (1, 2):
        make_job(task, scheduled_at=BASE - dt.timedelta(minutes=minutes))

    body = owner.get(f"/v1/tasks/{task.id}/history?limit=2").json()

    assert len(body["results"]) == 2 and body["next_cursor"] is None


def test_the_default_page_is_fifty(owner, store):
    task = make_task()
    store.write_many(
        [
            make_record(tenant_id=owner.tenant_id, task_id=task.id, scheduled_at=BASE - dt.timedelta(minutes=m))
            for m in range(60)
        ]
    )

    body = owner.get(f"/v1/tasks/{task.id}/history").json()

    assert len(body["results"]) == 50 and body["next_cursor"]


def test_a_history_store_that_raises_fails_the_request_instead_of_a_partial_page(owner, store):
    task = make_task()
    make_job(task)
    store.fail_with = HistoryUnavailable("cluster down")

    response = owner.get(f"/v1/tasks/{task.id}/history")

    assert response.status_code == 503
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"].endswith("/history-unavailable")
    assert "results" not in response.json()


def test_another_tenants_task_history_is_not_found(owner, other_tenant, store):
    task = other_tenant.make_task()
    make_job(task)

    assert owner.get(f"/v1/tasks/{task.id}/history").status_code == 404


@pytest.mark.parametrize("task_id", [None, "not-a-uuid"])
def test_an_unknown_or_malformed_task_is_not_found(owner, store, task_id):
    assert owner.get(f"/v1/tasks/{task_id or new_id()}/history").status_code == 404


def test_a_deleted_tasks_history_is_not_found(owner, store):
    task = make_task(status="deleted")

    assert owner.get(f"/v1/tasks/{task.id}/history").status_code == 404


@pytest.mark.parametrize("limit", ["0", "201", "-1", "ten", "1.5", "²", "١٢", "0" * 5000, ""])
def test_a_bad_limit_is_a_400_naming_the_field(owner, store, limit):
    response = owner.get(f"/v1/tasks/{make_task().id}/history?limit={limit}")

    assert response.status_code == 400
    assert response["Content-Type"] == PROBLEM
    assert "limit" in response.json()["errors"]


@pytest.mark.parametrize("cursor", ["garbage!", "bm90LWEtY3Vyc29y", "x" * 200, str(new_id())])
def test_a_bad_cursor_is_a_400_naming_the_field(owner, store, cursor):
    response = owner.get(f"/v1/tasks/{make_task().id}/history?cursor={cursor}")

    assert response.status_code == 400
    assert "cursor" in response.json()["errors"]


def test_a_cursor_round_trips_exactly():
    at = dt.datetime(2026, 11, 30, 23, 59, 59, 999_999, tzinfo=dt.UTC)
    job_id = new_id()

    assert decode_cursor(encode_cursor(Position(at, job_id))) == Position(at, job_id)


def test_the_merge_keeps_mysqls_copy_of_a_job_in_both_lists():
    from jobs.selectors import JobView

    job = make_job(make_task(), status=JobStatus.SUCCEEDED, attempt=1)
    live = JobView.of_job(job)
    copy = JobView.of_record(archived(job))

    assert merge_newest_first([live], [copy]) == [live]


@pytest.mark.django_db(transaction=True)
def test_history_merges_mysql_and_the_sql_history_table(owner):
    """The default adapter, read on its own connection in parallel with the MySQL read."""
    set_history_store(SqlHistoryStore())
    try:
        task = make_task()
        live = make_job(task, scheduled_at=BASE - dt.timedelta(minutes=1))
        both = make_job(task, scheduled_at=BASE - dt.timedelta(minutes=2), status=JobStatus.SUCCEEDED, finished_at=BASE)
        gone = make_record(tenant_id=owner.tenant_id, task_id=task.id, scheduled_at=BASE - dt.timedelta(minutes=3))
        SqlHistoryStore().write_many([archived(both), gone])

        pages = walk(owner, task.id, 2)

        assert [[(j["id"], j["archived"]) for j in page] for page in pages] == [
            [(str(live.id), False), (str(both.id), False)],
            [(str(gone.id), True)],
        ]
    finally:
        set_history_store(None)
