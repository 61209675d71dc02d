"""Overlap policies decided by the scheduler's tick, with two schedulers ticking at once on real connections."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from jobs.models import Job, JobStatus
from tasks.models import Task
from tests.factories import db_now, make_job, make_task
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)

MINUTE = timedelta(minutes=1)
PER_CASE = 6  # tasks per (policy, previous run) case: enough rows for the two schedulers to contend


def tick_concurrently(schedulers: int = 2, *, batch_size: int = 4) -> list[int]:
    """Tick `schedulers` schedulers in threads (each its own connection) until none finds work; runs each made."""
    barrier = threading.Barrier(schedulers)
    made = [0] * schedulers
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            scheduler = Scheduler(batch_size=batch_size, lookahead_seconds=0)
            barrier.wait(10)
            while True:
                result = scheduler.tick()
                made[index] += result.selected
                if not result.selected:
                    break
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(schedulers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    return made


def previous_run(task: Task, state: str, due) -> Job | None:
    """The task's previous run (a minute before `due`) in `state`: pending, running, retrying or succeeded."""
    earlier = due - MINUTE
    if state == "none":
        return None
    if state == "pending":
        return make_job(task, scheduled_at=earlier)
    if state == "running":
        return make_job(task, scheduled_at=earlier, status=JobStatus.RUNNING, attempt=1, worker_id="w1")
    if state == "retrying":  # a failed call put back to pending for a later attempt
        return make_job(task, scheduled_at=earlier, attempt=1, next_attempt_at=due + timedelta(minutes=5))
    return make_job(task, scheduled_at=earlier, status=JobStatus.SUCCEEDED, attempt=1, finished_at=earlier)


# (policy, previous run's state) -> (new run's status and error, previous run's status and error afterwards)
CASES = {
    ("allow", "pending"): ((JobStatus.PENDING, None), (JobStatus.PENDING, None)),
    ("skip", "none"): ((JobStatus.PENDING, None), None),
    ("skip", "pending"): ((JobStatus.SKIPPED, "overlap:skip"), (JobStatus.PENDING, None)),
    ("skip", "running"): ((JobStatus.SKIPPED, "overlap:skip"), (JobStatus.RUNNING, None)),
    ("skip", "retrying"): ((JobStatus.SKIPPED, "overlap:skip"), (JobStatus.PENDING, None)),
    ("skip", "succeeded"): ((JobStatus.PENDING, None), (JobStatus.SUCCEEDED, None)),
    ("buffer_one", "running"): ((JobStatus.PENDING, None), (JobStatus.RUNNING, None)),
    ("buffer_one", "pending"): ((JobStatus.SKIPPED, "overlap:buffer_one"), (JobStatus.PENDING, None)),
    ("buffer_one", "retrying"): ((JobStatus.SKIPPED, "overlap:buffer_one"), (JobStatus.PENDING, None)),
    ("replace", "pending"): ((JobStatus.PENDING, None), (JobStatus.CANCELLED, "overlap:replaced")),
    ("replace", "retrying"): ((JobStatus.PENDING, None), (JobStatus.CANCELLED, "overlap:replaced")),
    ("replace", "running"): ((JobStatus.PENDING, None), (JobStatus.RUNNING, None)),  # never interrupted
}


def test_each_policy_decides_the_new_run_against_pending_running_and_retrying_runs_with_two_schedulers():
    due = db_now().replace(second=0, microsecond=0)
    cases = []
    for (policy, state), expected in CASES.items():
        for _ in range(PER_CASE):
            task = make_task(overlap=policy, next_run_at=due)
            cases.append((task, previous_run(task, state, due), expected, (policy, state)))

    made = tick_concurrently()

    assert sum(made) == len(cases)  # every due task selected exactly once across the two schedulers
    for task, previous, (new_expected, previous_expected), case in cases:
        new = Job.objects.get(task_id=task.id, scheduled_at=due)  # exactly one run: no duplicate, none lost
        assert (new.status, new.error) == new_expected, case
        if new.status == JobStatus.SKIPPED:
            assert new.finished_at is not None, case
        task.refresh_from_db()
        assert task.next_run_at == due + MINUTE
        if previous is not None:
            previous.refresh_from_db()
            assert (previous.status, previous.error) == previous_expected, case
            if previous.status == JobStatus.CANCELLED:
                assert previous.finished_at is not None, case


def test_a_late_skip_task_makes_one_pending_run_and_skips_the_rest_each_run_once_with_two_schedulers():
    start = db_now().replace(second=0, microsecond=0) - 8 * MINUTE
    tasks = [make_task(overlap="skip", next_run_at=start) for _ in range(10)]

    made = tick_concurrently()

    assert sum(made) == Job.objects.count()
    for task in tasks:
        jobs = list(Job.objects.filter(task_id=task.id).order_by("scheduled_at"))
        # Contiguous runs, each exactly once: nothing lost, nothing doubled.
        assert [job.scheduled_at for job in jobs] == [start + n * MINUTE for n in range(len(jobs))]
        assert len(jobs) >= 9
        # The first run waits (no executor here); every later one is skipped behind it.
        assert [job.status for job in jobs] == [JobStatus.PENDING] + [JobStatus.SKIPPED] * (len(jobs) - 1)


def test_buffer_one_keeps_at_most_one_run_waiting_and_replace_keeps_only_the_newest():
    start = db_now().replace(second=0, microsecond=0) - 5 * MINUTE
    buffered = make_task(overlap="buffer_one", next_run_at=start)
    replaced = make_task(overlap="replace", next_run_at=start)

    tick_concurrently()

    statuses = Counter(Job.objects.filter(task_id=buffered.id).values_list("status", flat=True))
    assert statuses[JobStatus.PENDING] == 1 and statuses[JobStatus.SKIPPED] >= 5
    jobs = list(Job.objects.filter(task_id=replaced.id).order_by("scheduled_at"))
    assert [job.status for job in jobs] == [JobStatus.CANCELLED] * (len(jobs) - 1) + [JobStatus.PENDING]
    assert {job.error for job in jobs[:-1]} == {"overlap:replaced"}


def test_a_batch_without_overlap_policies_is_still_three_statements():
    due = db_now().replace(second=0, microsecond=0)
    for _ in range(5):
        make_task(next_run_at=due)

    result = Scheduler(lookahead_seconds=0).tick()

    assert (result.selected, result.statements) == (5, 3)


def test_a_batch_with_every_option_is_six_statements_whatever_its_size():
    due = db_now().replace(second=0, microsecond=0)
    for policy in ("allow", "skip", "buffer_one", "replace") * 5:
        make_task(overlap=policy, next_run_at=due)
    for _ in range(5):
        make_task(max_runs=10, window_seconds=30, next_run_at=due)

    result = Scheduler(lookahead_seconds=0).tick()

    # select, plain insert, options' insert, replace's update, plain advance, limited advance
    assert (result.selected, result.statements) == (25, 6)


def test_a_buffer_one_run_behind_a_call_in_flight_waits_for_that_calls_lease_to_end():
    due = db_now().replace(second=0, microsecond=0)
    buffered = make_task(overlap="buffer_one", next_run_at=due)
    lease_end = due + timedelta(seconds=25)
    make_job(
        buffered,
        scheduled_at=due - MINUTE,
        status=JobStatus.RUNNING,
        attempt=1,
        worker_id="w1",
        lease_expires_at=lease_end,
    )
    free = make_task(overlap="buffer_one", next_run_at=due)

    Scheduler(lookahead_seconds=0).tick()

    waiting = Job.objects.get(task_id=buffered.id, scheduled_at=due)
    assert (waiting.status, waiting.next_attempt_at) == (JobStatus.PENDING, lease_end)
    assert waiting.scheduled_at == due  # its identity (X-Scheduled-At) stays nominal
    assert Job.objects.get(task_id=free.id, scheduled_at=due).next_attempt_at == due
