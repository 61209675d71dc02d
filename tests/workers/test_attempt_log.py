"""The attempt log: each result write appends its attempt to the job, in the same fenced statement, the last 20 kept."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse

from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome, record_results
from tests.admin.support import make_staff, support_group
from tests.factories import db_now, make_job, make_task

pytestmark = pytest.mark.django_db

WORKER = "exec-log"


def running_job(**fields) -> Job:
    now = db_now()
    return make_job(
        make_task(),
        status=JobStatus.RUNNING,
        attempt=1,
        worker_id=WORKER,
        started_at=now - timedelta(seconds=1),
        lease_expires_at=now + timedelta(seconds=60),
        **fields,
    )


def log_of(job: Job) -> list[dict]:
    return json.loads(Job.objects.get(pk=job.pk).attempts)


def put_back_running(job: Job, attempt: int) -> None:
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, attempt=attempt, worker_id=WORKER)


def test_a_result_appends_its_attempt_with_times_duration_status_and_error():
    job = running_job()
    failure = JobResult(job.pk, 1, Outcome.RETRY, 503, "HTTP 503", "busy", delay_seconds=10, duration_ms=250)

    record_results(worker_id=WORKER, results=[failure])

    [entry] = log_of(job)
    assert (entry["attempt"], entry["status"], entry["http_status"], entry["error"], entry["duration_ms"]) == (
        1,
        "pending",
        503,
        "HTTP 503",
        250,
    )
    assert entry["claimed_at"] <= entry["started_at"] < entry["finished_at"]


def test_attempts_accumulate_oldest_first():
    job = running_job()
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, Outcome.RETRY, None, "timeout", None, 10, 30000)])
    put_back_running(job, 2)
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 2, Outcome.SUCCEEDED, 200, None, "ok", None, 12)])

    log = log_of(job)
    assert [(e["attempt"], e["status"], e["error"]) for e in log] == [(1, "pending", "timeout"), (2, "succeeded", None)]


def test_only_the_last_twenty_attempts_are_kept():
    old = [{"attempt": n, "status": "pending"} for n in range(1, 21)]
    job = running_job(attempts=json.dumps(old))
    put_back_running(job, 21)

    record_results(worker_id=WORKER, results=[JobResult(job.pk, 21, Outcome.DEAD, 500, "HTTP 500", None, None, 5)])

    log = log_of(job)
    assert len(log) == 20 and [e["attempt"] for e in log] == list(range(2, 22))


def test_a_result_dropped_by_the_fence_adds_nothing_to_the_log():
    job = running_job()
    late = JobResult(job.pk, 0, Outcome.SUCCEEDED, 200, None, "ok", None, 5)  # an older claim's attempt

    report = record_results(worker_id=WORKER, results=[late])

    assert report.dropped == [late] and Job.objects.get(pk=job.pk).attempts is None


def test_the_job_api_returns_the_attempt_log(owner):
    job = running_job()
    Job.objects.filter(pk=job.pk).update(tenant_id=owner.tenant_id)
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, Outcome.DEAD, 404, "HTTP 404", None, None, 7)])

    body = owner.get(f"/v1/jobs/{job.pk}").json()

    assert [(a["attempt"], a["http_status"], a["duration_ms"], a["status"]) for a in body["attempts"]] == [
        (1, 404, 7, "dead")
    ]


def test_a_job_that_never_ran_has_an_empty_log(owner):
    job = make_job(owner.make_task())
    assert owner.get(f"/v1/jobs/{job.pk}").json()["attempts"] == []


def test_the_admin_shows_the_attempt_log_newest_first(client):
    job = running_job()
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, Outcome.RETRY, 502, "HTTP 502", None, 10, 31)])
    put_back_running(job, 2)
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 2, Outcome.RETRY, None, "timeout <30s>", None, 20, 9)])
    agent = make_staff("agent", groups=(support_group(),))

    client.force_login(agent)
    page = client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()

    table = page[page.index('id="attempt-log"') :]
    assert table.index("timeout &lt;30s&gt;") < table.index("HTTP 502")  # newest first, escaped
    assert "31 ms" in table and "9 ms" in table
