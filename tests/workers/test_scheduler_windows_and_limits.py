"""The tick's flexible windows, start/end/run limits and interval schedules, on the real database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Job, JobStatus
from jobs.queue import claim_due, record_results
from tasks.models import TaskStatus
from tasks.schedule.window import call_time
from tasks.signals import tasks_completed
from tests.factories import db_now, make_job, make_task
from workers.executor.results import decide
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)

MINUTE = timedelta(minutes=1)


def catch_up(scheduler: Scheduler | None = None, *, ticks: int = 50) -> list:
    """Tick until nothing is due; every tick's result."""
    scheduler = scheduler or Scheduler(lookahead_seconds=0)
    results = []
    for _ in range(ticks):
        result = scheduler.tick()
        results.append(result)
        if not result.selected:
            return results
    raise AssertionError("still due after the ticks allowed")


def jobs_of(task) -> list[Job]:
    return list(Job.objects.filter(task_id=task.id).order_by("scheduled_at"))


# --- window ------------------------------------------------------------------------


def test_a_windowed_run_keeps_its_nominal_time_and_is_called_at_its_own_offset_inside_the_window():
    start = db_now().replace(second=0, microsecond=0) - 20 * MINUTE
    tasks = [make_task(window_seconds=60, next_run_at=start) for _ in range(5)]

    catch_up()

    offsets = set()
    for task in tasks:
        for job in jobs_of(task):
            offset = job.next_attempt_at - job.scheduled_at
            assert timedelta(0) <= offset < timedelta(seconds=60)
            # The same (task, run) always gives the same call time: any scheduler, any replay.
            assert job.next_attempt_at == call_time(task.id.bytes, job.scheduled_at, 60)
            assert job.scheduled_at.second == 0  # the run's identity (X-Scheduled-At) is nominal
            offsets.add(offset)
    assert len(offsets) > 50  # spread: runs land on different points of the window


def test_a_tick_replayed_for_an_existing_run_computes_the_same_call_time():
    due = db_now().replace(second=0, microsecond=0)
    task = make_task(window_seconds=600, cron_expression="*/15 * * * *", next_run_at=due)
    Scheduler(lookahead_seconds=0).tick()
    first = Job.objects.get(task_id=task.id)

    task.refresh_from_db()
    Job.objects.filter(pk=first.pk).delete()
    task.next_run_at = due  # as if a second scheduler reached the same run
    task.save(update_fields=["next_run_at"])
    Scheduler(lookahead_seconds=0).tick()

    assert Job.objects.get(task_id=task.id).next_attempt_at == first.next_attempt_at


# --- limits ------------------------------------------------------------------------


def test_max_runs_makes_that_many_runs_then_completes_the_task_and_reports_it():
    start = db_now().replace(second=0, microsecond=0) - 10 * MINUTE
    task = make_task(max_runs=3, next_run_at=start)
    other = make_task(next_run_at=start)
    received = []

    def receiver(**kwargs):
        received.extend(kwargs["task_ids"])

    tasks_completed.connect(receiver, dispatch_uid="test-completed")
    try:
        results = catch_up()
    finally:
        tasks_completed.disconnect(dispatch_uid="test-completed")

    assert [job.scheduled_at for job in jobs_of(task)] == [start, start + MINUTE, start + 2 * MINUTE]
    task.refresh_from_db()
    assert (task.status, task.next_run_at, task.runs_scheduled) == (TaskStatus.COMPLETED, None, 3)
    assert [task_id for result in results for task_id in result.completed] == [task.id]
    assert received == [task.id]
    other.refresh_from_db()
    assert other.status == TaskStatus.ACTIVE and len(jobs_of(other)) >= 11


def test_skipped_runs_count_toward_max_runs():
    start = db_now().replace(second=0, microsecond=0) - 10 * MINUTE
    task = make_task(max_runs=4, overlap="skip", next_run_at=start)

    catch_up()

    assert [job.status for job in jobs_of(task)] == [JobStatus.PENDING] + [JobStatus.SKIPPED] * 3
    task.refresh_from_db()
    assert task.status == TaskStatus.COMPLETED


def test_ends_at_keeps_the_run_at_ends_at_and_none_after_it():
    start = db_now().replace(second=0, microsecond=0) - 10 * MINUTE
    task = make_task(ends_at=start + 2 * MINUTE, next_run_at=start)

    catch_up()

    assert [job.scheduled_at for job in jobs_of(task)] == [start, start + MINUTE, start + 2 * MINUTE]
    task.refresh_from_db()
    assert (task.status, task.next_run_at) == (TaskStatus.COMPLETED, None)


def test_a_task_found_past_its_ends_at_makes_no_run_and_completes():
    start = db_now().replace(second=0, microsecond=0) - 10 * MINUTE
    task = make_task(ends_at=start - MINUTE, next_run_at=start)

    result = Scheduler(lookahead_seconds=0).tick()

    assert jobs_of(task) == []
    assert result.completed == (task.id,)
    task.refresh_from_db()
    assert (task.status, task.next_run_at, task.runs_scheduled) == (TaskStatus.COMPLETED, None, 0)


def test_delete_after_completion_soft_deletes_the_task_and_its_last_run_still_waits_to_fire():
    due = db_now().replace(second=0, microsecond=0)
    task = make_task(max_runs=1, delete_after_completion=True, next_run_at=due)

    Scheduler(lookahead_seconds=0).tick()

    task.refresh_from_db()
    assert task.status == TaskStatus.DELETED and task.deleted_at is not None
    assert [(job.scheduled_at, job.status) for job in jobs_of(task)] == [(due, JobStatus.PENDING)]


# --- every ---------------------------------------------------------------------------


def test_every_keeps_fixed_utc_spacing_across_madrids_spring_forward():
    # Madrid springs forward at 2026-03-29 01:00 UTC (02:00 -> 03:00 local).
    start = datetime(2026, 3, 28, 22, 0, tzinfo=UTC)
    task = make_task(
        cron_expression=None, timezone="Europe/Madrid", every_seconds=90 * 60, anchor=start, next_run_at=start
    )
    # A scheduler that replays everything it missed, so the walk reaches across the change.
    scheduler = Scheduler(lookahead_seconds=0, missed_after_seconds=10**9, missed_runs_max=10**6)
    for _ in range(6):
        scheduler.tick()

    made = [job.scheduled_at for job in jobs_of(task)]
    assert made == [start + n * timedelta(minutes=90) for n in range(6)]
    assert datetime(2026, 3, 29, 1, 0, tzinfo=UTC) in made  # 03:00 local, the first instant after the gap
    task.refresh_from_db()
    assert task.next_run_at == start + 6 * timedelta(minutes=90)


def test_every_works_with_the_missed_runs_policies():
    start = db_now().replace(second=0, microsecond=0) - timedelta(hours=5)
    latest = make_task(cron_expression=None, every_seconds=3600, anchor=start, next_run_at=start, missed_runs="latest")
    skip = make_task(cron_expression=None, every_seconds=3600, anchor=start, next_run_at=start, missed_runs="skip")

    catch_up()

    assert [job.scheduled_at for job in jobs_of(latest)] == [start + timedelta(hours=5)]
    assert jobs_of(skip) == []
    skip.refresh_from_db()
    assert skip.next_run_at == start + timedelta(hours=6)


@pytest.mark.parametrize(("task_status", "after_failure"), [("completed", "pending"), ("paused", "cancelled")])
def test_the_last_run_of_a_completed_task_keeps_its_retries_unlike_a_paused_ones(task_status, after_failure):
    task = make_task(status=task_status, next_run_at=None)
    make_job(task, scheduled_at=db_now() - MINUTE, next_attempt_at=db_now() - timedelta(seconds=1))
    (claimed,) = claim_due(worker_id="w-a", limit=1, lookahead_seconds=1)
    failure = decide(
        job_id=claimed.id,
        fence=claimed.fence,
        attempt=claimed.attempt,
        max_attempts=claimed.max_attempts,
        backoff_base_seconds=claimed.backoff_base_seconds,
        http_status=503,
        error=None,
        response_body="busy",
    )

    record_results(worker_id="w-a", results=[failure])

    assert Job.objects.get(id=claimed.id).status == after_failure


def test_a_completion_is_in_the_tasks_audit_trail_and_notifies_its_subscribed_tenant_once():
    from tasks.models import TaskChange
    from tests.notifications.support import sent, subscribe

    start = db_now().replace(second=0, microsecond=0) - 10 * MINUTE
    subscribe("tenant-a", events=["task.completed"])
    task = make_task(max_runs=2, next_run_at=start)
    unsubscribed = make_task(tenant_id="tenant-b", max_runs=1, next_run_at=start)

    catch_up()

    (change,) = TaskChange.objects.filter(task_id=task.id, action="complete")
    assert change.actor == "system"
    assert {"field": "status", "old": "active", "new": "completed", "masked": False, "truncated": False} in (
        change.changes
    )
    ((kind, data),) = sent("tenant-a")
    assert (kind, data["task_id"], data["runs"]) == ("task.completed", str(task.id), 2)
    assert TaskChange.objects.filter(task_id=unsubscribed.id, action="complete").count() == 1
    assert sent("tenant-b") == []
