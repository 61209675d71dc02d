"""GET /v1/jobs/{id} and POST /v1/jobs/{id}/retry."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from domain.ids import new_id
from history.base import HistoryUnavailable
from jobs.models import Job, JobStatus
from tests.factories import make_job, make_task
from tests.history.conftest import make_record

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def dead_job(task, **overrides):
    finished = timezone.now() - dt.timedelta(hours=3)
    fields = dict(status=JobStatus.DEAD, attempt=5, error="HTTP 502", http_status=502, finished_at=finished)
    fields.update(overrides)
    return make_job(task, **fields)


def test_a_job_in_the_queue_is_returned_from_mysql(owner, store):
    task = make_task()
    job = make_job(task)

    response = owner.get(f"/v1/jobs/{job.id}")

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(job.id) and body["task_id"] == str(task.id)
    assert body["status"] == "pending" and body["archived"] is False
    assert body["request"] == {"method": "POST", "url": "https://example.com/hook"}
    assert body["next_attempt_at"] is not None


def test_an_archived_job_is_returned_from_the_history_store(owner, store):
    record = make_record(tenant_id=owner.tenant_id, status="dead", error="timeout", http_status=None)
    store.write_many([record])

    response = owner.get(f"/v1/jobs/{record.id}")

    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["status"], body["error"], body["archived"]) == (
        str(record.id),
        "dead",
        "timeout",
        True,
    )
    assert body["next_attempt_at"] is None


def test_a_job_in_both_stores_is_mysqls_copy(owner, store):
    job = make_job(make_task(), status=JobStatus.PENDING, attempt=3)
    stale = make_record(tenant_id=owner.tenant_id, task_id=job.task_id, id=job.id, status="dead", attempt=3)
    store.write_many([stale])

    body = owner.get(f"/v1/jobs/{job.id}").json()

    assert (body["status"], body["archived"]) == ("pending", False)


@pytest.mark.parametrize("where", ["queue", "history"])
def test_another_tenants_job_is_not_found(owner, other_tenant, store, where):
    if where == "queue":
        job_id = make_job(other_tenant.make_task()).id
    else:
        record = make_record(tenant_id=other_tenant.tenant_id)
        store.write_many([record])
        job_id = record.id

    response = owner.get(f"/v1/jobs/{job_id}")

    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM


@pytest.mark.parametrize("job_id", [str(new_id()), "not-a-uuid", "0" * 300])
def test_an_unknown_or_malformed_job_id_is_not_found(owner, store, job_id):
    assert owner.get(f"/v1/jobs/{job_id}").status_code == 404


def test_without_a_token_the_job_api_is_unauthorized(stranger, store):
    job = make_job(make_task())

    assert stranger.get(f"/v1/jobs/{job.id}").status_code == 401
    assert stranger.post(f"/v1/jobs/{job.id}/retry").status_code == 401


def test_a_job_not_in_mysql_while_the_history_store_is_down_is_a_503_not_a_404(owner, store):
    store.fail_with = HistoryUnavailable("down")

    response = owner.get(f"/v1/jobs/{new_id()}")

    assert response.status_code == 503
    assert response["Content-Type"] == PROBLEM
    assert response["Retry-After"] == "5"


def test_a_job_in_mysql_is_served_while_the_history_store_is_down(owner, store):
    job = make_job(make_task())
    store.fail_with = HistoryUnavailable("down")

    assert owner.get(f"/v1/jobs/{job.id}").status_code == 200


# --- retry ---


def test_retrying_a_dead_job_is_accepted_and_requeues_the_same_job(owner, store):
    task = make_task(max_attempts=4)
    job = dead_job(task)

    response = owner.post(f"/v1/jobs/{job.id}/retry")

    assert response.status_code == 202
    body = response.json()
    assert (body["id"], body["status"], body["attempt"], body["max_attempts"]) == (str(job.id), "pending", 5, 9)
    assert body["error"] is None and body["scheduled_at"] == owner.get(f"/v1/jobs/{job.id}").json()["scheduled_at"]
    job.refresh_from_db()
    assert job.status == JobStatus.PENDING


def test_retrying_a_job_that_is_not_dead_is_a_conflict(owner, store):
    job = make_job(make_task(), status=JobStatus.SUCCEEDED, attempt=1, finished_at=timezone.now())

    response = owner.post(f"/v1/jobs/{job.id}/retry")

    assert response.status_code == 409
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"].endswith("/job-not-dead")
    assert Job.objects.get(id=job.id).status == JobStatus.SUCCEEDED


def test_retrying_twice_is_accepted_then_a_conflict(owner, store):
    job = dead_job(make_task())

    assert owner.post(f"/v1/jobs/{job.id}/retry").status_code == 202
    assert owner.post(f"/v1/jobs/{job.id}/retry").status_code == 409


def test_retrying_another_tenants_dead_job_is_not_found_and_changes_nothing(owner, other_tenant, store):
    job = dead_job(other_tenant.make_task())

    response = owner.post(f"/v1/jobs/{job.id}/retry")

    assert response.status_code == 404
    assert Job.objects.get(id=job.id).status == JobStatus.DEAD


def test_retrying_an_archived_job_is_not_found(owner, store):
    record = make_record(tenant_id=owner.tenant_id, status="dead")
    store.write_many([record])

    assert owner.post(f"/v1/jobs/{record.id}/retry").status_code == 404
    assert store.get(owner.tenant_id, record.id) == record  # untouched


@pytest.mark.parametrize("job_id", [str(new_id()), "nope"])
def test_retrying_an_unknown_or_malformed_id_is_not_found(owner, store, job_id):
    assert owner.post(f"/v1/jobs/{job_id}/retry").status_code == 404


@pytest.mark.parametrize("route", ["/v1/jobs/{}", "/v1/jobs/{}/retry"])
def test_another_tenants_an_unknown_and_a_malformed_job_get_one_identical_404_body(owner, other_tenant, store, route):
    method = owner.post if route.endswith("retry") else owner.get
    others = dead_job(other_tenant.make_task()).id

    bodies = [method(route.format(job_id)).json() for job_id in (others, new_id(), "not-a-uuid")]

    assert bodies[0] == bodies[1] == bodies[2]
    assert bodies[0]["status"] == 404 and bodies[0]["type"].endswith("/not-found")


def test_the_job_and_task_apis_answer_an_unknown_task_with_the_same_404_body(owner, other_tenant, store):
    others = other_tenant.make_task().id

    bodies = [
        owner.get(f"/v1/tasks/{task_id}{suffix}").json()
        for task_id in (others, new_id())
        for suffix in ("", "/history")
    ]

    assert all(body == bodies[0] for body in bodies)
    assert bodies[0]["detail"] == "No such task."
