"""The attempt log: each result write appends its attempt to the job, in the same fenced statement, the last 20 kept."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from django.urls import reverse

from domain.attempt_log import Attempt, read_attempts
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


def log_of(job: Job) -> list[Attempt]:
    return read_attempts(Job.objects.get(pk=job.pk).attempts)


def stored_log(job: Job) -> list:
    return json.loads(Job.objects.get(pk=job.pk).attempts)


def old_entries(attempts: range) -> str:
    """A log of earlier attempts as the writers store them (one second apart)."""
    return json.dumps([[n, 1796130000000 + 1000 * n, 40, "pending", 503, "HTTP 503"] for n in attempts])


def put_back_running(job: Job, attempt: int) -> None:
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, attempt=attempt, fence=attempt, worker_id=WORKER)


def test_a_result_appends_its_attempt_with_times_duration_status_and_error():
    job = running_job()
    failure = JobResult(job.pk, 1, 1, Outcome.RETRY, 503, "HTTP 503", "busy", delay_seconds=10, duration_ms=250)

    record_results(worker_id=WORKER, results=[failure])

    [entry] = log_of(job)
    assert (entry.attempt, entry.status, entry.http_status, entry.error, entry.duration_ms) == (
        1,
        "pending",
        503,
        "HTTP 503",
        250,
    )
    # The finish is the database's clock at the write, the start that minus the call's duration.
    written = Job.objects.get(pk=job.pk).updated_at.replace(microsecond=0)
    assert written <= entry.finished_at.replace(microsecond=0) <= written + timedelta(seconds=1)
    assert entry.finished_at - entry.started_at == timedelta(milliseconds=250)


def test_the_stored_entry_is_a_compact_array_with_epoch_milliseconds():
    job = running_job()
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, 1, Outcome.SUCCEEDED, 200, None, "ok", None, 12)])

    [entry] = stored_log(job)
    assert entry[0] == 1 and entry[2:] == [12, "succeeded", 200, None]
    written = Job.objects.get(pk=job.pk).updated_at.timestamp()  # NOW(3) of the same statement
    assert isinstance(entry[1], int) and entry[1] == round(written * 1000)
    assert len(Job.objects.get(pk=job.pk).attempts) < 60  # the entry's size is the log's cost


def test_an_error_with_quotes_and_brackets_stays_one_readable_entry():
    job = running_job()
    error = 'HTTP 500 "]], [x'
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, 1, Outcome.RETRY, 500, error, None, 10, 3)])
    put_back_running(job, 2)
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 2, 2, Outcome.SUCCEEDED, 200, None, "", None, 4)])

    assert [(e.attempt, e.error) for e in log_of(job)] == [(1, error), (2, None)]


def test_attempts_accumulate_oldest_first():
    job = running_job()
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, 1, Outcome.RETRY, None, "timeout", None, 10, 30000)])
    put_back_running(job, 2)
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 2, 2, Outcome.SUCCEEDED, 200, None, "ok", None, 12)])

    log = log_of(job)
    assert [(e.attempt, e.status, e.error) for e in log] == [(1, "pending", "timeout"), (2, "succeeded", None)]
    assert log[0].finished_at <= log[1].finished_at


def test_only_the_last_twenty_attempts_are_kept():
    job = running_job(attempts=old_entries(range(1, 21)))
    put_back_running(job, 21)

    record_results(worker_id=WORKER, results=[JobResult(job.pk, 21, 21, Outcome.DEAD, 500, "HTTP 500", None, None, 5)])

    log = log_of(job)
    assert len(log) == 20 and [e.attempt for e in log] == list(range(2, 22))
    assert (log[-1].status, log[-1].error, log[-1].duration_ms) == ("dead", "HTTP 500", 5)


def test_a_log_under_twenty_entries_keeps_them_all_past_attempt_twenty():
    # A manual retry grants a fresh budget: attempt 25 with 5 entries kept drops none.
    job = running_job(attempts=old_entries(range(20, 25)))
    put_back_running(job, 25)

    record_results(worker_id=WORKER, results=[JobResult(job.pk, 25, 25, Outcome.SUCCEEDED, 200, None, "", None, 5)])

    assert [e.attempt for e in log_of(job)] == [20, 21, 22, 23, 24, 25]


def test_a_result_dropped_by_the_fence_adds_nothing_to_the_log():
    job = running_job()
    late = JobResult(job.pk, 0, 0, Outcome.SUCCEEDED, 200, None, "ok", None, 5)  # an older claim's attempt

    report = record_results(worker_id=WORKER, results=[late])

    assert report.dropped == [late] and Job.objects.get(pk=job.pk).attempts is None


def test_the_job_api_returns_the_attempt_log(owner):
    job = running_job()
    Job.objects.filter(pk=job.pk).update(tenant_id=owner.tenant_id)
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, 1, Outcome.DEAD, 404, "HTTP 404", None, None, 7)])

    body = owner.get(f"/v1/jobs/{job.pk}").json()

    assert [(a["attempt"], a["http_status"], a["duration_ms"], a["status"]) for a in body["attempts"]] == [
        (1, 404, 7, "dead")
    ]
    [entry] = body["attempts"]
    assert set(entry) == {"attempt", "started_at", "finished_at", "duration_ms", "status", "http_status", "error"}
    started, finished = (datetime.fromisoformat(entry[key]) for key in ("started_at", "finished_at"))
    assert finished - started == timedelta(milliseconds=7)


def test_a_job_that_never_ran_has_an_empty_log(owner):
    job = make_job(owner.make_task())
    assert owner.get(f"/v1/jobs/{job.pk}").json()["attempts"] == []


def test_the_admin_shows_the_attempt_log_newest_first(client):
    job = running_job()
    record_results(worker_id=WORKER, results=[JobResult(job.pk, 1, 1, Outcome.RETRY, 502, "HTTP 502", None, 10, 31)])
    put_back_running(job, 2)
    timeout = JobResult(job.pk, 2, 2, Outcome.RETRY, None, "timeout <30s>", None, 20, 9)
    record_results(worker_id=WORKER, results=[timeout])
    agent = make_staff("agent", groups=(support_group(),))

    client.force_login(agent)
    page = client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()

    table = page[page.index('id="attempt-log"') :]
    assert table.index("timeout &lt;30s&gt;") < table.index("HTTP 502")  # newest first, escaped
    assert "31 ms" in table and "9 ms" in table
