"""The reconciler on real MariaDB: expired leases go back (or to the DLQ), the attempt is never added twice,
and the tasks of the jobs it takes back show it (last run, dead jobs in a row, auto-pause)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from domain.attempt_log import Attempt, read_attempts
from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome, claim_due, record_results, sweep_expired_leases
from jobs.queue.lifecycle import REASON_AUTO_PAUSED
from tasks import run_health
from tasks.models import Task, TaskChange
from tests.concurrency import at_once
from tests.factories import make_job, make_task
from tests.workers.executor_db import bulk_jobs, db_now
from workers.reconciler import reconcile_step

pytestmark = pytest.mark.django_db(transaction=True)

T = datetime(2027, 1, 1, tzinfo=UTC)


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


def _log(job) -> list[Attempt]:
    return read_attempts(Job.objects.get(id=job.id).attempts)


def test_an_expired_lease_appends_its_attempt_to_the_log_with_what_the_job_became():
    (job,) = _claimed()
    _expire(job)
    sweep_expired_leases(limit=10)
    [entry] = _log(job)
    assert (entry.attempt, entry.status, entry.error, entry.http_status) == (1, "pending", "lease expired", None)
    # It began when it was due to (it was due before the claim: the claim time) and ended when taken back.
    claimed = Job.objects.filter(id=job.id).values_list("started_at", flat=True).get()
    assert entry.started_at is not None and abs(entry.started_at - claimed) < timedelta(milliseconds=2)
    assert entry.finished_at - entry.started_at == timedelta(milliseconds=entry.duration_ms) and entry.duration_ms > 0


def test_the_lease_expiry_entry_follows_the_earlier_attempts_and_the_next_result_follows_it():
    (job,) = _claimed(max_attempts=3)
    record_results(worker_id="w-dead", results=[JobResult(job.id, 1, 1, Outcome.RETRY, 503, "HTTP 503", "", 0, 40)])
    Job.objects.filter(id=job.id).update(next_attempt_at=db_now() - timedelta(seconds=1))
    (job,) = claim_due(worker_id="w-dead", limit=1, lookahead_seconds=1)
    _expire(job)
    sweep_expired_leases(limit=10)
    (job,) = claim_due(worker_id="w-dead", limit=1, lookahead_seconds=1)
    record_results(worker_id="w-dead", results=[JobResult(job.id, 3, 3, Outcome.DEAD, 500, "HTTP 500", "", None, 30)])
    log = _log(job)
    assert [(e.attempt, e.status, e.error) for e in log] == [
        (1, "pending", "HTTP 503"),
        (2, "pending", "lease expired"),
        (3, "dead", "HTTP 500"),
    ]


def test_an_expired_lease_at_the_last_attempt_is_logged_as_dead():
    (job,) = _claimed(max_attempts=1)
    _expire(job)
    sweep_expired_leases(limit=10)
    assert [(e.status, e.error) for e in _log(job)] == [("dead", "lease expired")]


def test_the_log_keeps_the_last_20_entries_when_a_lease_expires():
    (job,) = _claimed(max_attempts=30)
    old = [[n, 1796130000000 + 1000 * n, 40, "pending", 500, "HTTP 500"] for n in range(1, 21)]
    Job.objects.filter(id=job.id).update(attempts=json.dumps(old), attempt=21)
    _expire(job)
    sweep_expired_leases(limit=10)
    log = _log(job)
    assert len(log) == 20 and log[0].attempt == 2 and (log[-1].attempt, log[-1].error) == (21, "lease expired")


# How a task is doing, kept by the sweep as by the result write (jobs.queue.task_health).


def _expired_jobs(task, n=1, *, attempt=1, first_minute=0, **fields):
    """`n` running jobs of `task` whose lease expired a minute ago, oldest lease first."""
    now = db_now()
    return [
        make_job(task, scheduled_at=T + timedelta(minutes=first_minute + i), status=JobStatus.RUNNING,
                 attempt=attempt, worker_id="w-dead", lease_expires_at=now - timedelta(seconds=60 - i), **fields)
        for i in range(n)
    ]  # fmt: skip


def _health(task):
    row = Task.objects.get(pk=task.pk)
    return row.status, row.consecutive_failures, row.last_run_job_id, row.last_run_status, row.last_run_http_status


def test_an_expired_lease_at_the_last_attempt_is_the_tasks_last_run_and_one_more_dead_job(owner):
    task = make_task(max_attempts=1)
    Task.objects.filter(pk=task.pk).update(consecutive_failures=1)
    (job,) = _expired_jobs(task)
    assert sweep_expired_leases(limit=10) == 1
    assert Job.objects.get(pk=job.pk).status == JobStatus.DEAD
    assert _health(task) == ("active", 2, job.pk, run_health.DEAD, None)
    last = owner.get(f"/v1/tasks/{task.pk}").json()["last_run"]
    assert (last["job_id"], last["status"], last["http_status"]) == (str(job.pk), "dead", None)
    assert last["scheduled_at"] == "2027-01-01T00:00:00Z" and last["at"] is not None


def test_an_expired_lease_into_a_retry_shows_retrying_without_counting_a_dead_job():
    task = make_task(max_attempts=3)
    Task.objects.filter(pk=task.pk).update(consecutive_failures=2)
    (job,) = _expired_jobs(task)
    sweep_expired_leases(limit=10)
    assert Job.objects.get(pk=job.pk).status == JobStatus.PENDING
    assert _health(task) == ("active", 2, job.pk, run_health.RETRYING, None)


def test_n_dead_jobs_in_a_row_through_results_and_sweeps_pause_the_task_and_cancel_its_pending_jobs(caplog):
    task = make_task(auto_pause_after=3, max_attempts=1)
    pending = make_job(task, scheduled_at=T + timedelta(days=1))
    (failed,) = _expired_jobs(task, first_minute=10)
    Job.objects.filter(pk=failed.pk).update(lease_expires_at=db_now() + timedelta(minutes=5))  # its result comes back
    record_results(worker_id="w-dead", results=[JobResult(failed.pk, 1, 1, Outcome.DEAD, 500, "HTTP 500")])
    first, second = _expired_jobs(task, 2)
    Job.objects.filter(pk=second.pk).update(lease_expires_at=db_now() + timedelta(minutes=5))  # not yet
    assert sweep_expired_leases(limit=10) == 1
    assert _health(task) == ("active", 2, first.pk, run_health.DEAD, None)
    assert Job.objects.get(pk=pending.pk).status == JobStatus.PENDING
    Job.objects.filter(pk=second.pk).update(lease_expires_at=db_now() - timedelta(seconds=1))
    assert sweep_expired_leases(limit=10) == 1
    row = Task.objects.get(pk=task.pk)
    assert (row.status, row.consecutive_failures, row.last_run_job_id) == ("paused", 3, second.pk)
    assert row.paused_reason == "paused automatically after 3 dead jobs in a row"
    cancelled = Job.objects.get(pk=pending.pk)
    assert (cancelled.status, cancelled.error) == (JobStatus.CANCELLED, REASON_AUTO_PAUSED)
    assert Job.objects.get(pk=second.pk).status == JobStatus.DEAD  # in the DLQ, retryable after a resume
    (event,) = [r for r in caplog.records if getattr(r, "event", None) == "task_auto_paused"]
    assert (event.task_id, event.tenant_id) == (str(task.pk), task.tenant_id)


def test_a_retry_swept_with_the_dead_job_that_pauses_the_task_is_cancelled():
    task = make_task(auto_pause_after=1, max_attempts=2)
    dead, retry = _expired_jobs(task, 2)
    Job.objects.filter(pk=dead.pk).update(attempt=2)
    assert sweep_expired_leases(limit=10) == 2
    assert [Job.objects.get(pk=job.pk).status for job in (dead, retry)] == [JobStatus.DEAD, JobStatus.CANCELLED]
    assert _health(task) == ("paused", 1, retry.pk, run_health.CANCELLED, None)
    # The sweep's auto-pause is in the task's audit trail, by the system, in the sweep's transaction.
    (change,) = TaskChange.objects.filter(task_id=task.pk)
    assert (change.action, change.actor, change.changes[0]["new"]) == ("auto_pause", "system", "paused")


def test_one_sweep_keeps_the_health_of_each_of_its_tasks_in_one_statement_per_batch():
    failing, flaky = make_task(max_attempts=1), make_task(max_attempts=3)
    dead = _expired_jobs(failing, 3, max_attempts=1)
    retry = _expired_jobs(flaky, 2, first_minute=5)
    orphans = bulk_jobs(2, status=JobStatus.RUNNING, attempt=1, worker_id="w-dead")  # no task row
    Job.objects.filter(id__in=orphans).update(lease_expires_at=db_now() - timedelta(seconds=1))
    with CaptureQueriesContext(connection) as captured:
        assert sweep_expired_leases(limit=10) == 7
    verbs = [
        next(line for line in q["sql"].splitlines() if not line.lstrip().startswith("--")).split()[0].upper()
        for q in captured.captured_queries
    ]
    # find the jobs, lock them, lock their tasks, one UPDATE of the tasks, one of the jobs: whatever the batch size;
    # with dead jobs in it, one read of their tenants' notification subscriptions (none here: nothing written).
    assert (verbs.count("SELECT"), verbs.count("UPDATE"), verbs.count("INSERT")) == (4, 2, 0)
    assert _health(failing) == ("active", 3, dead[-1].pk, run_health.DEAD, None)
    assert _health(flaky) == ("active", 0, retry[-1].pk, run_health.RETRYING, None)
    assert set(Job.objects.filter(id__in=orphans).values_list("status", flat=True)) == {JobStatus.PENDING}


def test_a_result_that_landed_first_is_the_last_run_and_the_sweep_counts_nothing():
    task = make_task(max_attempts=1)
    (job,) = _expired_jobs(task)
    record_results(worker_id="w-dead", results=[JobResult(job.pk, 1, 1, Outcome.SUCCEEDED, 204)])
    assert sweep_expired_leases(limit=10) == 0
    assert _health(task) == ("active", 0, job.pk, run_health.SUCCEEDED, 204)


def test_a_job_whose_result_is_being_written_is_skipped_by_the_sweep_and_not_counted():
    task = make_task(max_attempts=1)
    held, swept = _expired_jobs(task, 2)
    locked, release = threading.Event(), threading.Event()

    def hold_the_row():
        # An executor's result batch between its fenced lock and its commit.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", [held.pk.bytes])
            locked.set()
            release.wait(30)

    def sweep_meanwhile():
        assert locked.wait(30)
        try:
            return sweep_expired_leases(limit=10)  # never waits on the held row
        finally:
            release.set()

    _, returned = at_once(lambda work: work(), [(hold_the_row,), (sweep_meanwhile,)])
    assert returned == 1
    assert [Job.objects.get(pk=job.pk).status for job in (held, swept)] == [JobStatus.RUNNING, JobStatus.DEAD]
    assert _health(task) == ("active", 1, swept.pk, run_health.DEAD, None)


def _write_or_sweep(results):
    return record_results(worker_id="w-live", results=results) if results else sweep_expired_leases(limit=10)


def test_a_sweep_and_a_result_batch_over_the_same_tasks_both_land_without_a_deadlock():
    # Both lock their jobs, then the tasks in id order: they queue on the first shared task.
    tasks = [make_task(max_attempts=1, auto_pause_after=0) for _ in range(2)]
    for round_ in range(6):
        swept = [_expired_jobs(task, first_minute=10 * round_)[0] for task in tasks]
        written = [
            make_job(task, scheduled_at=T + timedelta(minutes=10 * round_ + 5), status=JobStatus.RUNNING, attempt=1,
                     worker_id="w-live", lease_expires_at=db_now() + timedelta(minutes=5))
            for task in reversed(tasks)
        ]  # fmt: skip
        results = [JobResult(job.pk, 1, 1, Outcome.DEAD, 500, "HTTP 500") for job in written]
        report, returned = at_once(_write_or_sweep, [(results,), (None,)])
        assert (len(report.written), returned) == (2, 2)
        assert {Job.objects.get(pk=job.pk).status for job in swept + written} == {JobStatus.DEAD}
    assert [Task.objects.get(pk=task.pk).consecutive_failures for task in tasks] == [12, 12]
