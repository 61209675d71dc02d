"""POST /v1/jobs/{id}/cancel: a pending job leaves the queue for good; anything else is a 404 or a 409."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from domain.ids import new_id
from jobs.models import Job, JobStatus
from jobs.services import CANCELLED_BY_TENANT
from tests.factories import make_job

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def test_cancelling_a_pending_job_is_accepted_and_it_never_runs(owner):
    job = make_job(owner.make_task())

    response = owner.post(f"/v1/jobs/{job.id}/cancel")

    assert response.status_code == 202
    body = response.json()
    assert (body["id"], body["status"], body["error"]) == (str(job.id), "cancelled", CANCELLED_BY_TENANT)
    assert body["finished_at"] is not None and body["next_attempt_at"] is None
    assert Job.objects.get(id=job.id).status == JobStatus.CANCELLED


def test_a_job_waiting_for_a_retry_can_be_cancelled_and_keeps_its_attempts(owner):
    job = make_job(
        owner.make_task(), attempt=2, error="HTTP 503", next_attempt_at=timezone.now() + dt.timedelta(minutes=5)
    )

    assert owner.post(f"/v1/jobs/{job.id}/cancel").status_code == 202
    job.refresh_from_db()
    assert (job.status, job.attempt) == (JobStatus.CANCELLED, 2)


@pytest.mark.parametrize("status", [JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.DEAD, JobStatus.CANCELLED])
def test_cancelling_a_job_that_is_not_pending_is_a_conflict_and_changes_nothing(owner, status):
    job = make_job(owner.make_task(), status=status, attempt=1, worker_id="exec-1" if status == "running" else None)

    response = owner.post(f"/v1/jobs/{job.id}/cancel")

    assert response.status_code == 409
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"].endswith("/job-not-pending")
    assert Job.objects.get(id=job.id).status == status


def test_cancelling_twice_is_accepted_then_a_conflict(owner):
    job = make_job(owner.make_task())

    assert owner.post(f"/v1/jobs/{job.id}/cancel").status_code == 202
    assert owner.post(f"/v1/jobs/{job.id}/cancel").status_code == 409


def test_cancelling_another_tenants_job_is_not_found_and_changes_nothing(owner, other_tenant):
    job = make_job(other_tenant.make_task())

    response = owner.post(f"/v1/jobs/{job.id}/cancel")

    assert response.status_code == 404 and response["Content-Type"] == PROBLEM
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING


@pytest.mark.parametrize("job_id", [str(new_id()), "nope", "0" * 40])
def test_cancelling_a_missing_or_malformed_job_is_not_found(owner, job_id):
    assert owner.post(f"/v1/jobs/{job_id}/cancel").status_code == 404


def test_cancel_needs_a_token(client):
    assert client.post(f"/v1/jobs/{new_id()}/cancel").status_code == 401


def test_cancel_takes_only_post(owner):
    job = make_job(owner.make_task())
    assert owner.get(f"/v1/jobs/{job.id}/cancel").status_code == 405
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING
