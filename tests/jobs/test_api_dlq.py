"""GET /v1/dlq: the tenant's dead jobs, newest first, cursor paginated, filterable by task."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from domain.ids import new_id
from jobs.models import JobStatus
from tests.factories import make_job, make_task

pytestmark = pytest.mark.django_db

START = timezone.now().replace(microsecond=0) - dt.timedelta(days=1)


def job(task, status, minute, **overrides):
    return make_job(task, status=status, scheduled_at=START + dt.timedelta(minutes=minute), **overrides)


def ids(response):
    assert response.status_code == 200, response.content
    return [j["id"] for j in response.json()["results"]]


def test_the_dlq_lists_only_the_tenants_dead_jobs_newest_first(owner, other_tenant):
    mine, theirs = make_task(), other_tenant.make_task()
    dead = [job(mine, JobStatus.DEAD, m, attempt=5, finished_at=timezone.now()) for m in range(3)]
    job(mine, JobStatus.SUCCEEDED, 10, attempt=1)
    job(mine, JobStatus.PENDING, 11)
    job(mine, JobStatus.RUNNING, 12, attempt=1)
    job(theirs, JobStatus.DEAD, 13, attempt=5)

    response = owner.get("/v1/dlq")

    assert ids(response) == [str(j.id) for j in reversed(dead)]
    assert response.json()["next_cursor"] is None
    assert {j["status"] for j in response.json()["results"]} == {"dead"}


def test_the_dlq_pages_with_a_cursor_without_gaps_or_duplicates(owner):
    task = make_task()
    dead = [job(task, JobStatus.DEAD, m, attempt=5) for m in range(7)]

    seen, cursor = [], None
    while True:
        response = owner.get("/v1/dlq?limit=3" + (f"&cursor={cursor}" if cursor else ""))
        page = ids(response)
        assert len(page) <= 3
        seen += page
        cursor = response.json()["next_cursor"]
        if cursor is None:
            break

    assert seen == [str(j.id) for j in reversed(dead)]


def test_the_dlq_filters_by_task(owner):
    first, second = make_task(), make_task()
    wanted = job(first, JobStatus.DEAD, 1, attempt=5)
    job(second, JobStatus.DEAD, 2, attempt=5)

    assert ids(owner.get(f"/v1/dlq?task={first.id}")) == [str(wanted.id)]


def test_filtering_by_another_tenants_task_shows_nothing(owner, other_tenant):
    theirs = other_tenant.make_task()
    job(theirs, JobStatus.DEAD, 1, attempt=5)

    assert ids(owner.get(f"/v1/dlq?task={theirs.id}")) == []


def test_a_retried_job_leaves_the_dlq(owner):
    dead = job(make_task(), JobStatus.DEAD, 1, attempt=5)

    assert owner.post(f"/v1/jobs/{dead.id}/retry").status_code == 202
    assert ids(owner.get("/v1/dlq")) == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("cursor=nope", "cursor"),
        (f"cursor={'0' * 100}", "cursor"),
        ("task=nope", "task"),
        (f"task=urn:uuid:{new_id()}{' ' * 40}", "task"),
        ("limit=0", "limit"),
        ("limit=500", "limit"),
        ("limit=²", "limit"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_field(owner, query, field):
    response = owner.get(f"/v1/dlq?{query}")

    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert field in response.json()["errors"]


def test_an_unknown_task_filter_is_an_empty_page(owner):
    assert ids(owner.get(f"/v1/dlq?task={new_id()}")) == []
