"""The scheduler and calendars on the real database: excluded dates become skipped runs, never twice."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from jobs.models import Job, JobStatus
from tasks.calendars import rules, services
from tasks.calendars.models import Calendar, TaskCalendar
from tasks.models import Task
from tests.factories import db_now, make_task
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)

HOUR = timedelta(hours=1)
TENANT = "tenant-a"


def day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def save_calendar(name: str, *days: datetime, zone: str = "UTC", tenant: str = TENANT) -> None:
    spec = services.CalendarSpec(timezone=zone, dates=tuple(day.date() for day in days), ranges=())
    services.calendar_put(tenant_id=tenant, name=name, spec=spec)


def hourly_task(start: datetime, *calendars: str, tenant: str = TENANT) -> Task:
    task = make_task(
        tenant_id=tenant,
        cron_expression="0 * * * *",
        next_run_at=start,
        exclude_calendars=list(calendars) or None,
    )
    if calendars:
        services.task_calendars_set(tenant_id=tenant, task_id=task.pk, names=list(calendars))
    return task


def jobs_of(task: Task) -> dict[datetime, tuple[str, str | None]]:
    rows = Job.objects.filter(task_id=task.pk).values_list("scheduled_at", "status", "error")
    return {at: (status, error) for at, status, error in rows}


def tick_until_idle(scheduler: Scheduler, limit: int = 500) -> int:
    ticks = 0
    while scheduler.tick().selected:
        ticks += 1
        assert ticks < limit, "the catch-up never ended"
    return ticks


def test_a_run_on_an_excluded_date_is_created_skipped_with_its_reason_and_the_task_advances():
    today = day_start(db_now())
    start = today - 2 * timedelta(days=1)
    yesterday = today - timedelta(days=1)
    save_calendar("closed", yesterday)
    excluded = hourly_task(start, "closed")
    plain = hourly_task(start)

    scheduler = Scheduler(lookahead_seconds=0, missed_runs_max=1000)
    first = scheduler.tick()
    assert first.statements == 3  # calendars cost no statement of their own
    tick_until_idle(scheduler)

    made = jobs_of(excluded)
    assert len(made) == len(jobs_of(plain)) >= 48
    for at, (status, error) in made.items():
        if yesterday <= at < today:
            assert (status, error) == (JobStatus.SKIPPED, "calendar:closed"), at
        else:
            assert (status, error) == (JobStatus.PENDING, None), at
    assert sum(status == JobStatus.SKIPPED for status, _ in made.values()) == 24
    assert all(status == JobStatus.PENDING for status, _ in jobs_of(plain).values())
    skipped = Job.objects.filter(task_id=excluded.pk, status=JobStatus.SKIPPED).first()
    assert skipped is not None and skipped.finished_at is not None  # terminal: archived like a cancelled job
    excluded.refresh_from_db()
    assert excluded.next_run_at > db_now() - HOUR


def test_the_calendars_zone_decides_the_local_date():
    # Madrid's day starts at 23:00 UTC the day before (winter) or 22:00 (summer).
    today = day_start(db_now())
    start = today - 2 * timedelta(days=1)
    yesterday = today - timedelta(days=1)
    save_calendar("madrid", yesterday, zone="Europe/Madrid")
    task = hourly_task(start, "madrid")
    tick_until_idle(Scheduler(lookahead_seconds=0, missed_runs_max=1000))

    zone = ZoneInfo("Europe/Madrid")
    for at, (status, error) in jobs_of(task).items():
        local_date = at.astimezone(zone).date()
        expected = JobStatus.SKIPPED if local_date == yesterday.date() else JobStatus.PENDING
        assert status == expected, (at, local_date)
        assert error == (rules.skip_reason("madrid") if status == JobStatus.SKIPPED else None)


def test_the_first_calendar_in_the_tasks_order_is_the_reason():
    today = day_start(db_now())
    yesterday = today - timedelta(days=1)
    save_calendar("first", yesterday)
    save_calendar("second", yesterday)
    task = hourly_task(yesterday, "second", "first")
    tick_until_idle(Scheduler(lookahead_seconds=0, missed_runs_max=1000))
    reasons = Counter(error for status, error in jobs_of(task).values() if status == JobStatus.SKIPPED)
    assert reasons == Counter({"calendar:second": 24})


def test_a_calendar_edit_affects_only_runs_not_yet_created():
    today = day_start(db_now())
    day3, day2, day1 = (today - n * timedelta(days=1) for n in (3, 2, 1))
    save_calendar("edited", day2)
    task = hourly_task(day3, "edited")
    scheduler = Scheduler(lookahead_seconds=0, missed_runs_max=1000)
    for _ in range(24):  # day 3's runs, one per tick
        assert scheduler.tick().selected == 1
    assert len(jobs_of(task)) == 24

    # Now day 3 and day 1 are excluded, day 2 no longer.
    save_calendar("edited", day3, day1)
    tick_until_idle(scheduler)

    for at, (status, _) in jobs_of(task).items():
        expected = JobStatus.SKIPPED if day1 <= at < today else JobStatus.PENDING
        assert status == expected, at  # day 3's runs were made before the edit: left as they were


def test_two_schedulers_ticking_in_threads_skip_each_excluded_run_once():
    today = day_start(db_now())
    start = today - 2 * timedelta(days=1)
    yesterday = today - timedelta(days=1)
    save_calendar("closed", yesterday)
    save_calendar("closed", yesterday, tenant="tenant-b")
    tasks = [hourly_task(start, "closed") for _ in range(10)]
    tasks += [hourly_task(start, "closed", tenant="tenant-b") for _ in range(10)]
    tasks += [hourly_task(start) for _ in range(10)]
    selected = [0, 0]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run(index: int) -> None:
        try:
            scheduler = Scheduler(batch_size=7, lookahead_seconds=0, missed_runs_max=1000)
            barrier.wait()
            idle = 0
            while idle < 3:  # the other thread may hold the rows a moment: idle three ticks in a row
                done = scheduler.tick().selected
                selected[index] += done
                idle = 0 if done else idle + 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=run, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

    total = Job.objects.filter(task_id__in=[task.pk for task in tasks]).count()
    assert sum(selected) == total  # no run selected twice
    assert all(selected), selected  # both did work
    for task in tasks:
        made = jobs_of(task)
        hours = sorted(made)
        assert hours == [start + n * HOUR for n in range(len(hours))]  # contiguous, each once
        skipped = {at for at, (status, _) in made.items() if status == JobStatus.SKIPPED}
        if task.exclude_calendars:
            assert skipped == {at for at in hours if yesterday <= at < today}
        else:
            assert skipped == set()


def test_a_run_now_of_a_task_is_never_skipped_by_its_calendar(owner):
    # Run now is the tenant's explicit call: calendars apply to scheduled runs only.
    today = day_start(db_now())
    save_calendar("today", today)
    task = hourly_task(db_now().replace(minute=0, second=0, microsecond=0) + HOUR, "today")
    response = owner.post(f"/v1/tasks/{task.pk}/run")
    assert response.status_code == 202, response.content
    assert Job.objects.get(pk=response.json()["id"]).status == JobStatus.PENDING


def test_preview_marks_the_runs_a_calendar_excludes(owner):
    now = datetime.now(UTC)
    tomorrow = day_start(now) + timedelta(days=1)
    save_calendar("tomorrow", tomorrow)
    task = hourly_task(now.replace(minute=0, second=0, microsecond=0) + HOUR, "tomorrow")
    runs = owner.get(f"/v1/tasks/{task.pk}/preview?n=50").json()["runs"]
    for run in runs:
        at = datetime.fromisoformat(run["at"].replace("Z", "+00:00"))
        expected = "tomorrow" if tomorrow <= at < tomorrow + timedelta(days=1) else None
        assert run["excluded_by"] == expected, run
    assert any(run["excluded_by"] for run in runs)
    # An unsaved schedule too.
    unsaved = owner.post(
        "/v1/schedules/preview?n=50",
        {"cron": "0 * * * *", "timezone": "UTC", "exclude_calendars": ["tomorrow"]},
        format="json",
    )
    assert unsaved.status_code == 200, unsaved.content
    assert [r["excluded_by"] for r in unsaved.json()["runs"]] == [r["excluded_by"] for r in runs]


def test_a_skipped_run_is_in_the_tasks_history_with_its_reason(owner, store):
    today = day_start(db_now())
    save_calendar("closed", today - timedelta(days=1))
    task = hourly_task(today - timedelta(days=1), "closed")
    Scheduler(lookahead_seconds=0, missed_runs_max=1000).tick()
    (run,) = owner.get(f"/v1/tasks/{task.pk}/history").json()["results"]
    assert (run["status"], run["error"], run["scheduled_at"]) == (
        "skipped",
        "calendar:closed",
        (today - timedelta(days=1)).isoformat().replace("+00:00", "Z"),
    )


def test_a_calendar_delete_racing_a_task_naming_it_never_leaves_the_task_on_a_missing_calendar():
    # The calendar row is the lock both take: whichever commits second sees the first.
    outcomes: list[str] = []
    for attempt in range(6):
        name = f"racy-{attempt}"
        save_calendar(name, day_start(db_now()))
        task = make_task(tenant_id=TENANT, cron_expression="0 * * * *")
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def link(task=task, name=name, barrier=barrier, errors=errors) -> None:
            try:
                barrier.wait()
                services.task_calendars_set(tenant_id=TENANT, task_id=task.pk, names=[name])
                outcomes.append("linked")
            except services.CalendarNotFound:
                outcomes.append("calendar gone")
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            finally:
                connection.close()

        def delete(name=name, barrier=barrier, errors=errors) -> None:
            try:
                barrier.wait()
                services.calendar_delete(tenant_id=TENANT, name=name)
                outcomes.append("deleted")
            except services.CalendarInUse:
                outcomes.append("in use")
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=link), threading.Thread(target=delete)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not errors, errors
        linked = TaskCalendar.objects.filter(task_id=task.pk, calendar_name=name).exists()
        exists = Calendar.objects.filter(tenant_id=TENANT, name=name).exists()
        assert linked <= exists, (attempt, outcomes)  # a link never outlives its calendar
        assert linked != (not exists)  # exactly one of the two won
    assert set(outcomes) <= {"linked", "in use", "calendar gone", "deleted"}


def test_with_an_overlap_policy_a_calendar_date_is_skipped_for_the_calendar_and_replaces_nothing():
    today = day_start(db_now())
    yesterday = today - timedelta(days=1)
    save_calendar("closed", yesterday)
    start = yesterday - 2 * HOUR
    replacing = hourly_task(start, "closed")
    Task.objects.filter(pk=replacing.pk).update(overlap="replace")
    skipping = hourly_task(start, "closed")
    Task.objects.filter(pk=skipping.pk).update(overlap="skip")

    scheduler = Scheduler(lookahead_seconds=0, missed_runs_max=1000)
    tick_until_idle(scheduler)

    replaced = jobs_of(replacing)
    # The two runs before the closed day: the first replaced by the second, which stays waiting
    # through the closed day (a skipped calendar run replaces nothing), then is replaced at midnight.
    assert replaced[start] == (JobStatus.CANCELLED, "overlap:replaced")
    assert all(replaced[yesterday + n * HOUR] == (JobStatus.SKIPPED, "calendar:closed") for n in range(24))
    skipped = jobs_of(skipping)
    assert skipped[start] == (JobStatus.PENDING, None)
    assert skipped[start + HOUR] == (JobStatus.SKIPPED, "overlap:skip")
    assert all(skipped[yesterday + n * HOUR] == (JobStatus.SKIPPED, "calendar:closed") for n in range(24))
    assert skipped[today] == (JobStatus.SKIPPED, "overlap:skip")
