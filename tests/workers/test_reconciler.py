"""The reconciler on real MariaDB: expired leases go back (or to the DLQ), the attempt is never added twice."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection

from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome, claim_due, record_results, sweep_expired_leases
from tests.workers.executor_db import bulk_jobs, db_now
from workers.reconciler import reconcile_step

pytestmark = pytest.mark.django_db(transaction=True)


def _claimed(count=1, **overrides):
    bulk_jobs(count, next_attempt_at=db_now() - timedelta(seconds=1), **overrides)
    return claim_due(worker_id="w-dead", limit=count, lookahead_seconds=1)


def _expire(*jobs, seconds_ago=1):
    with connection.cursor() as cursor:
        for job in jobs:
            cursor.execute(
                "UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL %s SECOND WHERE id = %s",
                [seconds_ago, job.id.bytes],
            )


def test_an_expired_lease_goes_back_to_pending_due_now_with_the_attempt_unchanged():
    (job,) = _claimed()
    _expire(job)
    assert sweep_expired_leases(limit=10) == 1
    row = Job.objects.get(id=job.id)
    assert (row.status, row.attempt, row.error, row.worker_id, row.lease_expires_at) == (
        JobStatus.PENDING,
        1,
        "lease expired",
        None,
        None,
    )
    assert abs((row.next_attempt_at - db_now()).total_seconds()) < 2


def test_an_expired_lease_at_the_last_attempt_goes_to_the_dlq():
    (job,) = _claimed(max_attempts=1)
    _expire(job)
    assert sweep_expired_leases(limit=10) == 1
    row = Job.objects.get(id=job.id)
    assert (row.status, row.attempt, row.error) == (JobStatus.DEAD, 1, "lease expired")
    assert row.finished_at is not None


def test_a_lease_that_has_not_expired_is_never_touched():
    jobs = _claimed(2)
    _expire(jobs[0])
    before = Job.objects.get(id=jobs[1].id)
    assert sweep_expired_leases(limit=10) == 1
    after = Job.objects.get(id=jobs[1].id)
    assert (after.status, after.worker_id, after.lease_expires_at, after.updated_at) == (
        JobStatus.RUNNING,
        "w-dead",
        before.lease_expires_at,
        before.updated_at,
    )


def test_a_job_never_runs_more_than_max_attempts_times_through_lease_expiries():
    (job,) = _claimed(max_attempts=2)
    claims = 1
    while True:
        _expire(job)
        sweep_expired_leases(limit=10)
        again = claim_due(worker_id="w-dead", limit=1, lookahead_seconds=1)
        if not again:
            break
        (job,) = again
        claims += 1
    assert claims == 2
    assert Job.objects.get(id=job.id).status == JobStatus.DEAD


def test_a_step_repeats_the_sweep_while_it_fills_the_limit_and_logs_each_sweeps_count(caplog):
    jobs = _claimed(25)
    _expire(*jobs)
    assert reconcile_step(limit=10) is False  # the last sweep was not full
    assert Job.objects.filter(status=JobStatus.PENDING, error="lease expired").count() == 25
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "reconcile"]
    assert (record.per_sweep, record.jobs) == ([10, 10, 5], 25)


def test_a_step_that_hits_its_sweep_cap_while_still_full_reports_busy():
    jobs = _claimed(25)
    _expire(*jobs)
    assert reconcile_step(limit=10, max_sweeps=2) is True  # the loop comes back at once
    assert Job.objects.filter(status=JobStatus.RUNNING).count() == 5


def test_a_step_with_nothing_expired_is_idle():
    _claimed(3)
    assert reconcile_step(limit=10) is False
    assert Job.objects.filter(status=JobStatus.RUNNING).count() == 3


def _log(job) -> list[dict]:
    return json.loads(Job.objects.get(id=job.id).attempts)


def test_an_expired_lease_appends_its_attempt_to_the_log_with_what_the_job_became():
    (job,) = _claimed()
    _expire(job)
    sweep_expired_leases(limit=10)
    [entry] = _log(job)
    assert (entry["attempt"], entry["status"], entry["error"], entry["http_status"], entry["duration_ms"]) == (
        1,
        "pending",
        "lease expired",
        None,
        None,
    )
    # Claimed, due to begin (it was due before the claim: the claim time), then taken back.
    assert entry["claimed_at"][:23] == entry["started_at"][:23] < entry["finished_at"]


def test_the_lease_expiry_entry_follows_the_earlier_attempts_and_the_next_result_follows_it():
    (job,) = _claimed(max_attempts=3)
    record_results(worker_id="w-dead", results=[JobResult(job.id, 1, Outcome.RETRY, 503, "HTTP 503", "", 0, 40)])
    Job.objects.filter(id=job.id).update(next_attempt_at=db_now() - timedelta(seconds=1))
    (job,) = claim_due(worker_id="w-dead", limit=1, lookahead_seconds=1)
    _expire(job)
    sweep_expired_leases(limit=10)
    (job,) = claim_due(worker_id="w-dead", limit=1, lookahead_seconds=1)
    record_results(worker_id="w-dead", results=[JobResult(job.id, 3, Outcome.DEAD, 500, "HTTP 500", "", None, 30)])
    log = _log(job)
    assert [(e["attempt"], e["status"], e["error"]) for e in log] == [
        (1, "pending", "HTTP 503"),
        (2, "pending", "lease expired"),
        (3, "dead", "HTTP 500"),
    ]


def test_an_expired_lease_at_the_last_attempt_is_logged_as_dead():
    (job,) = _claimed(max_attempts=1)
    _expire(job)
    sweep_expired_leases(limit=10)
    assert [(e["status"], e["error"]) for e in _log(job)] == [("dead", "lease expired")]


def test_the_log_keeps_the_last_20_entries_when_a_lease_expires():
    (job,) = _claimed(max_attempts=30)
    old = [{"attempt": n, "status": "pending", "error": "HTTP 500"} for n in range(1, 21)]
    Job.objects.filter(id=job.id).update(attempts=json.dumps(old), attempt=21)
    _expire(job)
    sweep_expired_leases(limit=10)
    log = _log(job)
    assert len(log) == 20 and log[0]["attempt"] == 2 and (log[-1]["attempt"], log[-1]["error"]) == (21, "lease expired")
