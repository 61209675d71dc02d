"""The scheduler's tick on the real database: one job per run, late never skipped, never twice."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.db.utils import OperationalError
from django.test.utils import CaptureQueriesContext

from domain.ids import new_id
from jobs.models import Job, JobStatus
from jobs.queue import DueTask
from tasks.models import Task, TaskStatus
from tasks.signals import tasks_completed
from tests.factories import db_now, make_job, make_task, make_tasks
from workers.scheduler import ROW_BYTES, Scheduler, _document

pytestmark = pytest.mark.django_db(transaction=True)

MINUTE = timedelta(minutes=1)


def minute_floor(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def runs(task: Task) -> list[datetime]:
    return list(Job.objects.filter(task_id=task.id).order_by("scheduled_at").values_list("scheduled_at", flat=True))


def test_a_due_task_gets_exactly_one_job_carrying_the_tasks_request_snapshot():
    due = minute_floor(db_now())
    task = make_task(
        tenant_id="tenant-b",
        http_url="https://example.com/hook?x=1",
        http_method="PUT",
        http_headers={"X-Trace": "abc"},
        http_body='{"hello": "world"}',
        secret_ref="vault:hook-secret",
        priority=2,
        timeout_seconds=12,
        max_attempts=7,
        backoff_base_seconds=3,
        next_run_at=due,
    )
    scheduler = Scheduler(lookahead_seconds=0)

    result = scheduler.tick()
    again = scheduler.tick()

    assert (result.selected, again.selected) == (1, 0)
    job = Job.objects.get(task_id=task.id)
    assert job.scheduled_at == job.next_attempt_at == due
    assert (job.status, job.attempt) == (JobStatus.PENDING, 0)
    assert job.tenant_id == "tenant-b"
    assert (job.priority, job.timeout_seconds, job.max_attempts, job.backoff_base_seconds) == (2, 12, 7, 3)
    assert (job.request_method, job.request_url) == ("PUT", "https://example.com/hook?x=1")
    assert job.request_headers == {"X-Trace": "abc"}
    assert job.request_body == '{"hello": "world"}'
    assert job.secret_ref == "vault:hook-secret"
    task.refresh_from_db()
    assert task.next_run_at == due + MINUTE


def test_a_task_due_after_the_lookahead_waits_and_one_inside_it_is_created_early():
    soon = db_now() + timedelta(seconds=30)
    task = make_task(next_run_at=soon)

    assert Scheduler(lookahead_seconds=0).tick().selected == 0
    assert runs(task) == []

    assert Scheduler(lookahead_seconds=60).tick().selected == 1
    assert runs(task) == [soon]


def test_paused_and_deleted_tasks_produce_nothing():
    due = minute_floor(db_now()) - MINUTE
    paused = make_task(status=TaskStatus.PAUSED, next_run_at=due)
    deleted = make_task(status=TaskStatus.DELETED, next_run_at=due)

    result = Scheduler(lookahead_seconds=0).tick()

    assert (result.selected, result.statements) == (0, 1)
    assert Job.objects.count() == 0
    for task in (paused, deleted):
        task.refresh_from_db()
        assert task.next_run_at == due


def test_a_one_shot_task_fires_once_and_then_has_no_next_run():
    run_at = db_now() - timedelta(seconds=5)
    task = make_task(run_at=run_at)
    scheduler = Scheduler(lookahead_seconds=0)

    assert scheduler.tick().selected == 1
    assert scheduler.tick().selected == 0

    assert runs(task) == [run_at]
    task.refresh_from_db()
    assert task.next_run_at is None
    assert task.status == TaskStatus.ACTIVE


def test_a_late_scheduler_catches_up_one_run_per_task_per_tick_without_skips_or_duplicates():
    start = minute_floor(db_now()) - timedelta(hours=1)
    tasks = [make_task(next_run_at=start) for _ in range(3)]
    scheduler = Scheduler(lookahead_seconds=0)

    first = scheduler.tick()
    assert first.selected == 3
    assert first.behind and not first.full  # the loop ticks again at once
    assert first.lag_seconds is not None and first.lag_seconds >= 3600
    assert [runs(task) for task in tasks] == [[start]] * 3

    assert scheduler.tick().selected == 3
    assert [runs(task) for task in tasks] == [[start, start + MINUTE]] * 3

    ticks = 2
    while scheduler.tick().selected:
        ticks += 1
        assert ticks < 70, "the catch-up never ended"

    caught_up_at = db_now()
    for task in tasks:
        made = runs(task)
        assert made == [start + n * MINUTE for n in range(len(made))]  # contiguous: nothing skipped
        task.refresh_from_db()
        assert task.next_run_at == made[-1] + MINUTE
        assert made[-1] <= caught_up_at < task.next_run_at + MINUTE
    assert ticks == len(runs(tasks[0]))  # one run per task per tick


def test_ticks_never_touch_version_or_updated_at():
    task = make_task(next_run_at=minute_floor(db_now()) - 5 * MINUTE, version=7)
    before = Task.objects.values_list("version", "updated_at").get(id=task.id)

    scheduler = Scheduler(lookahead_seconds=0)
    for _ in range(3):
        assert scheduler.tick().selected == 1

    assert len(runs(task)) == 3
    assert Task.objects.values_list("version", "updated_at").get(id=task.id) == before


def test_a_run_whose_job_already_exists_is_kept_and_the_task_still_advances():
    due = minute_floor(db_now())
    task = make_task(next_run_at=due)
    existing = make_job(task)  # e.g. a task resumed inside the lookahead window

    result = Scheduler(lookahead_seconds=0).tick()

    assert result.selected == 1
    assert list(Job.objects.filter(task_id=task.id).values_list("id", flat=True)) == [existing.id]
    task.refresh_from_db()
    assert task.next_run_at == due + MINUTE


def test_the_oldest_due_tasks_go_first_and_a_full_batch_asks_for_another_tick():
    now = minute_floor(db_now())
    newest = make_task(next_run_at=now - MINUTE)
    oldest = make_task(next_run_at=now - 3 * MINUTE, cron_expression="0 0 1 1 *")
    middle = make_task(next_run_at=now - 2 * MINUTE, cron_expression="0 0 1 1 *")
    scheduler = Scheduler(batch_size=2, lookahead_seconds=0)

    result = scheduler.tick()

    assert result.full and result.more_work
    assert (len(runs(oldest)), len(runs(middle)), len(runs(newest))) == (1, 1, 0)
    assert scheduler.tick().selected == 1
    assert len(runs(newest)) == 1


def test_a_full_tick_doubles_the_next_up_to_four_batches_and_a_tick_not_full_starts_over():
    # A catch-up (a cold start, an outage) pays each tick's fixed cost for more tasks; its first
    # tick keeps the batch size, so its first jobs exist as soon as before.
    due = minute_floor(db_now()) - MINUTE
    make_tasks(20, next_run_at=due, cron_expression="0 0 1 1 *")  # not due again after their tick
    scheduler = Scheduler(batch_size=2, lookahead_seconds=0)

    results = [scheduler.tick() for _ in range(5)]

    assert [(result.selected, result.full) for result in results] == [
        (2, True), (4, True), (8, True), (6, False), (0, False)
    ]  # fmt: skip
    assert Job.objects.filter(scheduled_at=due).count() == 20
    make_tasks(3, next_run_at=due, cron_expression="0 0 1 1 *")
    assert scheduler.tick().selected == 2  # the last tick was not full: the batch size again


def test_a_catch_up_tick_never_carries_more_rows_than_one_statement_holds():
    due = minute_floor(db_now()) - MINUTE
    make_tasks(9, next_run_at=due, cron_expression="0 0 1 1 *")
    scheduler = Scheduler(batch_size=2, lookahead_seconds=0, rows_per_statement=3)

    assert [scheduler.tick().selected for _ in range(4)] == [2, 3, 3, 1]
    assert scheduler.catch_up_limit() == 3 and scheduler.batch_limit() == 2


def test_a_tick_deadlocked_after_its_plan_runs_again_and_reports_the_attempt_that_committed():
    # Two schedulers' catch-up ticks can deadlock; InnoDB rolls the victim back whole (jobs, task
    # advances, completions and their records), and the tick runs again, planned anew.
    due = minute_floor(db_now()) - MINUTE
    make_tasks(3, next_run_at=due, cron_expression="0 0 1 1 *", max_runs=1)  # each completes
    inserts, after_the_deadlock, sent = [], [], []

    def deadlock_the_first_insert(execute, sql, params, many, context):
        if "INSERT INTO jobs" in sql:
            inserts.append(1)
            if len(inserts) == 1:
                raise OperationalError(1213, "Deadlock found when trying to get lock")
        if inserts:
            after_the_deadlock.append(sql)
        return execute(sql, params, many, context)

    def receiver(sender, task_ids, **kwargs):
        sent.append(task_ids)

    tasks_completed.connect(receiver, weak=False)
    try:
        with connection.execute_wrapper(deadlock_the_first_insert):
            result = Scheduler(lookahead_seconds=0).tick()
    finally:
        tasks_completed.disconnect(receiver)

    assert len(inserts) == 2
    assert result.selected == 3 and len(result.completed) == 3
    assert [len(ids) for ids in sent] == [3]  # told once, after the commit
    assert Job.objects.filter(scheduled_at=due).count() == 3
    # Only the statements of the attempt that committed (its SELECT came after the deadlock).
    assert "FOR UPDATE" in after_the_deadlock[0] and result.statements == len(after_the_deadlock)


def test_a_tick_that_lost_its_database_is_not_run_again():
    due = minute_floor(db_now()) - MINUTE
    make_tasks(1, next_run_at=due, cron_expression="0 0 1 1 *")
    selects = []

    def lost(execute, sql, params, many, context):
        if "FOR UPDATE" in sql:
            selects.append(1)
            raise OperationalError(2013, "Lost connection")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(lost), pytest.raises(OperationalError):
        Scheduler(lookahead_seconds=0).tick()
    assert len(selects) == 1


def kinds(captured: CaptureQueriesContext) -> list[str]:
    """The verb of each statement sent, past the SQL file's comment lines."""
    verbs = []
    for query in captured.captured_queries:
        lines = [line for line in query["sql"].splitlines() if line.strip() and not line.startswith("--")]
        verbs.append(lines[0].split()[0])
    return verbs


def _due_tasks(count: int) -> datetime:
    """`count` per-minute tasks due a minute ago; returns when they were due."""
    due = minute_floor(db_now()) - MINUTE
    make_tasks(count, next_run_at=due)
    return due


@pytest.mark.parametrize("batch_size", [1, 50, 600])
def test_a_tick_issues_three_statements_whatever_the_batch_size(batch_size):
    _due_tasks(batch_size)
    scheduler = Scheduler(batch_size=batch_size, lookahead_seconds=0)
    scheduler.batch_limit()  # max_allowed_packet is read once per scheduler, before its first tick

    with CaptureQueriesContext(connection) as captured:
        result = scheduler.tick()

    assert result.selected == Job.objects.count() == batch_size
    assert kinds(captured) == ["BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT"]
    assert result.statements == 3


def test_an_empty_tick_issues_one_statement():
    scheduler = Scheduler(lookahead_seconds=0)
    scheduler.batch_limit()

    with CaptureQueriesContext(connection) as captured:
        result = scheduler.tick()

    assert kinds(captured) == ["BEGIN", "SELECT", "COMMIT"]
    assert result.statements == 1
    assert result.lag_seconds is None and not result.more_work


def test_a_batch_larger_than_one_statement_carries_is_capped_and_still_takes_three_statements():
    due = minute_floor(db_now()) - MINUTE
    make_tasks(5, next_run_at=due, cron_expression="0 0 1 1 *")  # not due again after their tick
    scheduler = Scheduler(batch_size=5, lookahead_seconds=0, rows_per_statement=2)

    with CaptureQueriesContext(connection) as captured:
        results = [scheduler.tick() for _ in range(4)]

    assert [(result.selected, result.full) for result in results] == [(2, True), (2, True), (1, False), (0, False)]
    assert [result.statements for result in results] == [3, 3, 3, 1]
    assert kinds(captured) == [*["BEGIN", "SELECT", "INSERT", "UPDATE", "COMMIT"] * 3, "BEGIN", "SELECT", "COMMIT"]
    assert sorted(Job.objects.values_list("scheduled_at", flat=True)) == [due] * 5
    assert Task.objects.filter(next_run_at__gt=due).count() == 5


def test_the_batch_cap_comes_from_max_allowed_packet():
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        (packet,) = cursor.fetchone()

    rows = Scheduler(batch_size=10**9).batch_limit()

    assert 0 < rows * ROW_BYTES < packet
    assert rows >= 30_000  # the default 16 MiB holds ~88,000: the shipped batch is never capped
    assert Scheduler().batch_limit() == 1000


def test_the_longest_rows_fit_the_size_the_packet_budget_assumes():
    prev = datetime(2026, 12, 31, 23, 59, 59, 999999)  # a next run with microseconds: the longest row
    # A window (a call time), a run limit it reaches (completes) and the longest overlap policy.
    rows = [DueTask(new_id().bytes, prev, "* * * * *", "UTC", "all", prev, None, 59, "buffer_one", None, None, 0)] * 2

    document, _ = _document(rows)

    connection.ensure_connection()
    escaped = connection.connection.escape_string(document)  # as the driver sends it
    assert len(escaped) <= 2 * ROW_BYTES + 2


def test_the_document_carries_hex_ids_and_each_next_run_in_utc_to_the_microsecond():
    cron_task, one_shot = new_id(), new_id()
    prev = datetime(2026, 3, 29, 0, 30)  # naive UTC, as the driver returns DATETIME: 01:30 CET
    rows = [
        DueTask(cron_task.bytes, prev, "0 3 * * *", "Europe/Madrid", "all", prev, None, 0, "allow", None, None, 0),
        DueTask(one_shot.bytes, prev, None, None, "all", prev, None, 0, "allow", None, None, 0),
    ]

    document, earliest = _document(rows)

    (cron_row, one_shot_row) = json.loads(document)
    assert cron_row[0] == cron_task.hex and one_shot_row[0] == one_shot.hex
    assert uuid.UUID(cron_row[1]).version == 7 and cron_row[1] != one_shot_row[1]
    assert cron_row[2] == "2026-03-29 01:00:00.000000"  # 03:00 CEST, the first run after the gap
    assert one_shot_row[2] is None
    assert cron_row[3] == one_shot_row[3] == "2026-03-29 00:30:00.000000"  # each job is for the run that was due
    assert earliest == datetime(2026, 3, 29, 1, 0)


def test_a_schedule_with_no_next_run_gets_its_due_job_and_then_stops(caplog):
    due = minute_floor(db_now())
    broken = make_task(next_run_at=due, cron_expression="61 * * * *")
    healthy = make_task(next_run_at=due)

    with caplog.at_level(logging.ERROR, logger="workers.scheduler"):
        result = Scheduler(lookahead_seconds=0).tick()

    assert result.selected == 2
    assert runs(broken) == [due] and runs(healthy) == [due]
    broken.refresh_from_db()
    healthy.refresh_from_db()
    assert broken.next_run_at is None
    assert healthy.next_run_at == due + MINUTE
    assert [r.task_id for r in caplog.records if getattr(r, "event", "") == "schedule_error"] == [broken.id.hex]


def test_a_step_logs_the_ticks_size_duration_and_lag(caplog):
    make_task(next_run_at=minute_floor(db_now()) - 10 * MINUTE)

    with caplog.at_level(logging.INFO, logger="workers.scheduler"):
        more = Scheduler(lookahead_seconds=0).step()

    assert more is True  # still nine runs behind
    (record,) = [r for r in caplog.records if getattr(r, "event", "") == "tick"]
    assert (record.tasks, record.statements) == (1, 3)
    assert record.seconds > 0
    assert 600 <= record.lag_seconds < 700


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="batch_size"):
        Scheduler(batch_size=0)
    with pytest.raises(ValueError, match="lookahead"):
        Scheduler(lookahead_seconds=-1)
