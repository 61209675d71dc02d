"""A task shows how it is doing (last run, dead jobs in a row) and pauses itself after N dead jobs in a row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome, record_results
from tasks import run_health
from tasks.models import Task
from tests.factories import make_job, make_task

T = datetime(2027, 1, 1, tzinfo=UTC)


def _attempt(outcome):
    return run_health.Attempt(b"j" * 16, T, outcome, 500)


@pytest.mark.parametrize(
    ("outcomes", "count"),
    [(["dead"], 3), (["succeeded"], 0), (["retrying"], 2), (["dead", "succeeded", "dead"], 1)],
)
def test_a_success_resets_the_count_a_dead_job_adds_one_a_retry_leaves_it(outcomes, count):
    state = run_health.next_health(
        status="active", consecutive_failures=2, auto_pause_after=None, default_auto_pause_after=10,
        attempts=[_attempt(o) for o in outcomes],
    )  # fmt: skip
    assert state.consecutive_failures == count and not state.pause


@pytest.mark.parametrize(
    ("status", "override", "default", "pause"),
    [("active", None, 3, True), ("active", 0, 3, False), ("active", 4, 3, False), ("paused", None, 3, False),
     ("active", None, 0, False)],
)  # fmt: skip
def test_reaching_the_threshold_pauses_an_active_task_once(status, override, default, pause):
    state = run_health.next_health(
        status=status, consecutive_failures=2, auto_pause_after=override, default_auto_pause_after=default,
        attempts=[_attempt("dead")],
    )  # fmt: skip
    assert state.pause is pause
    assert state.paused_reason == ("paused automatically after 3 dead jobs in a row" if pause else "")


@pytest.mark.parametrize(
    ("failures", "outcomes", "pause"),
    [(5, ["dead"], True), (5, ["retrying"], False), (5, ["dead", "succeeded"], False),
     (0, ["dead", "dead", "dead"], True), (5, ["succeeded", "dead"], False)],
)  # fmt: skip
def test_a_threshold_below_the_count_pauses_at_the_next_dead_job(failures, outcomes, pause):
    # The tenant lowered auto_pause_after to 3 while the task had 5 dead jobs in a row.
    state = run_health.next_health(
        status="active", consecutive_failures=failures, auto_pause_after=3, default_auto_pause_after=10,
        attempts=[_attempt(o) for o in outcomes],
    )  # fmt: skip
    assert state.pause is pause


def _running(task, n=1, **fields):
    return [
        make_job(task, scheduled_at=datetime(2027, 1, 1, 0, i, tzinfo=UTC), status=JobStatus.RUNNING, attempt=1,
                 worker_id="w", **fields)
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.django_db
def test_the_result_batch_keeps_the_tasks_last_run_current_in_one_statement_per_batch(owner):
    tasks = [make_task() for _ in range(3)]
    jobs = [job for task in tasks for job in _running(task, n=4)]
    results = [JobResult(job.pk, 1, 1, Outcome.SUCCEEDED, http_status=204) for job in jobs]
    with CaptureQueriesContext(connection) as captured:
        record_results(worker_id="w", results=results)
    statements = [
        next(line for line in q["sql"].splitlines() if not line.startswith("--")).split()[0].upper()
        for q in captured.captured_queries
    ]
    # lock the jobs, lock their tasks, one UPDATE of the tasks, one UPDATE of the jobs: whatever the batch size.
    assert statements.count("UPDATE") == 2 and statements.count("SELECT") == 2
    shown = owner.get(f"/v1/tasks/{tasks[0].pk}").json()
    assert shown["consecutive_failures"] == 0
    last = shown["last_run"]
    assert (last["job_id"], last["status"], last["http_status"]) == (str(jobs[3].pk), "succeeded", 204)
    assert last["scheduled_at"] == "2027-01-01T00:03:00Z" and last["at"] is not None


@pytest.mark.django_db
def test_n_dead_jobs_in_a_row_pause_the_task_cancel_its_pending_jobs_and_say_why(owner):
    task = make_task(auto_pause_after=3, max_attempts=1)
    dead = _running(task, n=3, max_attempts=1)
    pending = make_job(task, scheduled_at=datetime(2027, 1, 2, tzinfo=UTC))
    record_results(worker_id="w", results=[JobResult(j.pk, 1, 1, Outcome.DEAD, 500, "HTTP 500") for j in dead[:2]])
    assert Task.objects.get(pk=task.pk).status == "active"
    report = record_results(worker_id="w", results=[JobResult(dead[2].pk, 1, 1, Outcome.DEAD, 500, "HTTP 500")])
    assert report.paused_tasks == [(task.tenant_id, task.pk)]
    shown = owner.get(f"/v1/tasks/{task.pk}").json()
    assert (shown["status"], shown["consecutive_failures"]) == ("paused", 3)
    assert shown["paused_reason"] == "paused automatically after 3 dead jobs in a row"
    assert shown["last_run"]["status"] == "dead"
    assert Job.objects.get(pk=pending.pk).status == JobStatus.CANCELLED
    assert Job.objects.get(pk=dead[2].pk).status == JobStatus.DEAD  # in the DLQ, retryable after a resume
    resumed = owner.post(f"/v1/tasks/{task.pk}/resume").json()
    assert (resumed["status"], resumed["consecutive_failures"], resumed["paused_reason"]) == ("active", 0, None)


@pytest.mark.django_db
def test_a_retry_in_the_batch_that_pauses_the_task_is_cancelled(owner):
    task = make_task(auto_pause_after=1)
    first, second = _running(task, n=2)
    record_results(
        worker_id="w",
        results=[
            JobResult(first.pk, 1, 1, Outcome.DEAD, 500, "HTTP 500"),
            JobResult(second.pk, 1, 1, Outcome.RETRY, 503, "HTTP 503", delay_seconds=10),
        ],
    )
    assert Task.objects.get(pk=task.pk).status == "paused"
    assert Job.objects.get(pk=second.pk).status == JobStatus.CANCELLED
    assert owner.get(f"/v1/tasks/{task.pk}").json()["last_run"]["status"] == "cancelled"


@pytest.mark.django_db
def test_auto_pause_after_zero_never_pauses(settings):
    settings.AUTO_PAUSE_AFTER_DEAD_JOBS = 2
    never = make_task(auto_pause_after=0)
    default = make_task()
    jobs = _running(never, n=3) + _running(default, n=3)
    record_results(worker_id="w", results=[JobResult(j.pk, 1, 1, Outcome.DEAD, 500, "HTTP 500") for j in jobs])
    assert Task.objects.get(pk=never.pk).status == "active"
    assert Task.objects.get(pk=never.pk).consecutive_failures == 3
    assert Task.objects.get(pk=default.pk).status == "paused"
