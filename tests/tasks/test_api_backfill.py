"""POST /v1/tasks/{id}/backfill: a past range's runs, made once, counted, calendars honoured, bounded."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from domain.ids import new_id
from domain.records import JobRecord
from jobs import backfill
from jobs.models import Job, JobStatus
from tasks.calendars import services as calendar_services
from tasks.models import TaskStatus
from tests.factories import db_now, make_task

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def hour_floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def post(client, task_id, start, end, **extra):
    return client.post(f"/v1/tasks/{task_id}/backfill", {"from": iso(start), "to": iso(end), **extra}, format="json")


def problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    return response.json()


@pytest.mark.django_db
def test_backfill_makes_each_run_of_the_range_once_with_the_tasks_request(owner, store):
    task = make_task(cron_expression="0 * * * *", http_body='{"x": 1}', priority=3, max_attempts=4)
    end = hour_floor(db_now())
    start = end - 10 * HOUR
    answer = post(owner, task.pk, start, end)
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"created": 10, "existing": 0, "excluded": 0}
    jobs = Job.objects.filter(task_id=task.pk).order_by("scheduled_at")
    assert [job.scheduled_at for job in jobs] == [start + n * HOUR for n in range(10)]  # [from, to)
    assert all(
        (j.status, j.request_body, j.priority, j.max_attempts, j.next_attempt_at)
        == (JobStatus.PENDING, '{"x": 1}', 3, 4, j.scheduled_at)
        for j in jobs
    )
    again = post(owner, task.pk, start - 2 * HOUR, end)
    assert again.json() == {"created": 2, "existing": 10, "excluded": 0}
    assert Job.objects.filter(task_id=task.pk).count() == 12


@pytest.mark.django_db
def test_runs_already_archived_are_existing_and_not_made_again(owner, store):
    task = make_task(cron_expression="0 * * * *")
    end = hour_floor(db_now())
    start = end - 4 * HOUR
    archived = start + HOUR
    store.write_many([_record(task, archived)])
    assert post(owner, task.pk, start, end).json() == {"created": 3, "existing": 1, "excluded": 0}
    assert not Job.objects.filter(task_id=task.pk, scheduled_at=archived).exists()


def _record(task, scheduled_at):
    return JobRecord(
        id=new_id(),
        tenant_id=task.tenant_id,
        task_id=task.pk,
        scheduled_at=scheduled_at,
        status=JobStatus.SUCCEEDED,
        attempt=1,
        max_attempts=5,
        priority=5,
        request_method="POST",
        request_url=task.http_url,
        finished_at=scheduled_at,
    )


@pytest.mark.django_db
def test_runs_on_an_excluded_date_are_made_skipped_and_counted_excluded(owner, store):
    end = hour_floor(db_now())
    start = end - 30 * HOUR
    excluded_day = (end - 26 * HOUR).replace(hour=0)
    calendar_services.calendar_put(
        tenant_id=owner.tenant_id,
        name="closed",
        spec=calendar_services.CalendarSpec(timezone="UTC", dates=(excluded_day.date(),), ranges=()),
    )
    task = make_task(tenant_id=owner.tenant_id, cron_expression="0 * * * *", exclude_calendars=["closed"])
    calendar_services.task_calendars_set(tenant_id=owner.tenant_id, task_id=task.pk, names=["closed"])
    in_day = sum(excluded_day <= start + n * HOUR < excluded_day + 24 * HOUR for n in range(30))
    answer = post(owner, task.pk, start, end).json()
    assert answer == {"created": 30 - in_day, "existing": 0, "excluded": in_day}
    skipped = Job.objects.filter(task_id=task.pk, status=JobStatus.SKIPPED)
    assert skipped.count() == in_day > 0
    assert set(skipped.values_list("error", flat=True)) == {"calendar:closed"}


@pytest.mark.django_db
def test_a_paused_task_or_a_one_shot_is_409_and_another_tenants_task_404(owner, other_tenant, store):
    end = hour_floor(db_now())
    paused = make_task(cron_expression="0 * * * *", status=TaskStatus.PAUSED)
    assert problem(post(owner, paused.pk, end - HOUR, end), 409)["type"].endswith("task-paused")
    one_shot = make_task(run_at=end - HOUR)
    assert problem(post(owner, one_shot.pk, end - 2 * HOUR, end), 409)["type"].endswith("not-recurring")
    mine = make_task(cron_expression="0 * * * *")
    problem(post(other_tenant, mine.pk, end - HOUR, end), 404)
    deleted = make_task(cron_expression="0 * * * *", status=TaskStatus.DELETED)
    problem(post(owner, deleted.pk, end - HOUR, end), 404)
    problem(post(owner, "not-an-id", end - HOUR, end), 404)
    assert Job.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("shift", "field"),
    [
        (lambda now: (now - HOUR, now - HOUR), "to"),  # empty range
        (lambda now: (now - HOUR, now - 2 * HOUR), "to"),  # backwards
        (lambda now: (now - HOUR, now + HOUR), "to"),  # the future
        (lambda now: (now - timedelta(days=200), now - timedelta(days=100)), "from"),  # past the history's TTL
        (lambda now: (now - (backfill.MAX_RUNS + 1) * MINUTE, now), "to"),  # too many runs
    ],
)
def test_each_bad_range_is_a_400_naming_its_field(owner, store, shift, field):
    task = make_task(cron_expression="* * * * *")
    start, end = shift(hour_floor(db_now()))
    refused = problem(post(owner, task.pk, start, end), 400)
    assert field in refused["errors"], refused
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_exactly_the_bound_of_runs_is_accepted(owner, store):
    task = make_task(cron_expression="* * * * *")
    end = hour_floor(db_now())
    answer = post(owner, task.pk, end - backfill.MAX_RUNS * MINUTE, end)
    assert answer.json() == {"created": backfill.MAX_RUNS, "existing": 0, "excluded": 0}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to": "2026-01-01T00:00:00Z"}, "from"),
        ({"from": "2026-01-01T00:00:00", "to": "2026-01-02T00:00:00Z"}, "from"),
        ({"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "n": 1}, "n"),
    ],
)
def test_bad_bodies_are_400s_naming_the_field(owner, store, body, field):
    task = make_task(cron_expression="0 * * * *")
    refused = problem(owner.post(f"/v1/tasks/{task.pk}/backfill", body, format="json"), 400)
    assert field in refused["errors"], refused


def test_the_overlap_policy_decides_which_of_the_ranges_runs_are_called():
    runs = [datetime(2026, 1, 1, hour, tzinfo=UTC) for hour in range(3)]
    assert backfill.runs_for_overlap(policy="allow", runs=runs) == [(run, None) for run in runs]
    assert backfill.runs_for_overlap(policy="skip", runs=runs) == [
        (runs[0], None),
        (runs[1], "overlap:skip"),
        (runs[2], "overlap:skip"),
    ]
    assert [reason for _, reason in backfill.runs_for_overlap(policy="buffer_one", runs=runs)] == [
        None,
        "overlap:buffer_one",
        "overlap:buffer_one",
    ]
    assert [reason for _, reason in backfill.runs_for_overlap(policy="replace", runs=runs)] == [
        "overlap:replaced",
        "overlap:replaced",
        None,
    ]
    assert backfill.runs_for_overlap(policy="skip", runs=runs[:1]) == [(runs[0], None)]


@pytest.mark.django_db
def test_a_skip_tasks_backfill_calls_one_run_and_makes_the_others_skipped_with_the_reason(owner, store):
    task = make_task(cron_expression="0 * * * *", overlap="skip")
    end = hour_floor(db_now())
    answer = post(owner, task.pk, end - 3 * HOUR, end)
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"created": 1, "existing": 0, "excluded": 2}
    jobs = Job.objects.filter(task_id=task.pk).order_by("scheduled_at")
    assert [(job.status, job.error) for job in jobs] == [
        (JobStatus.PENDING, None),
        (JobStatus.SKIPPED, "overlap:skip"),
        (JobStatus.SKIPPED, "overlap:skip"),
    ]


@pytest.mark.django_db
def test_an_interval_tasks_backfill_makes_its_anchored_runs(owner, store):
    end = hour_floor(db_now())
    anchor = end - 10 * HOUR + timedelta(minutes=15)
    task = make_task(cron_expression=None, every_seconds=5400, anchor=anchor, timezone="UTC")
    answer = post(owner, task.pk, end - 6 * HOUR, end)
    assert answer.status_code == 200, answer.content
    made = sorted(Job.objects.filter(task_id=task.pk).values_list("scheduled_at", flat=True))
    assert made == [anchor + n * timedelta(minutes=90) for n in range(3, 7)]
    assert answer.json() == {"created": 4, "existing": 0, "excluded": 0}


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_backfills_in_separate_connections_make_each_run_once(store):
    task = make_task(cron_expression="*/5 * * * *")
    end = db_now().replace(second=0, microsecond=0)
    end -= timedelta(minutes=end.minute % 5)
    start = end - timedelta(minutes=5 * 600)
    results: list[backfill.BackfillResult] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            barrier.wait()
            results.append(
                backfill.task_backfill(tenant_id=task.tenant_id, task_id=task.pk, start=start, end=end, actor="system")
            )
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert Job.objects.filter(task_id=task.pk).count() == 600
    assert sum(r.created for r in results) == 600
    assert all(r.created + r.existing == 600 and r.excluded == 0 for r in results)


@pytest.mark.django_db
def test_a_backfill_that_made_runs_is_in_the_tasks_audit_trail_and_a_no_op_is_not(owner, store):
    task = make_task(cron_expression="0 * * * *")
    end = hour_floor(db_now())
    start = end - 3 * HOUR
    assert post(owner, task.pk, start, end).json()["created"] == 3
    assert post(owner, task.pk, start, end).json() == {"created": 0, "existing": 3, "excluded": 0}

    changes = owner.get(f"/v1/tasks/{task.pk}/changes").json()["results"]

    backfills = [change for change in changes if change["action"] == "backfill"]
    assert len(backfills) == 1
    assert backfills[0]["actor"].startswith(("token:", "tenant:"))
    (entry,) = backfills[0]["changes"]
    assert entry["field"] == "backfill" and entry["old"] is None
    assert (entry["new"]["created"], entry["new"]["excluded"]) == (3, 0)
