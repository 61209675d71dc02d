"""The schedule options of issue 31 through the task API: overlap, every/anchor, window, start/end/run limits."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import JobStatus
from tasks import services
from tasks.models import Task, TaskStatus
from tasks.schedule.window import call_time
from tests.factories import make_job, make_task
from tests.history.conftest import make_record

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
PREVIEW = "/v1/schedules/preview"
NOW = datetime(2027, 3, 26, 12, 0, 30, tzinfo=UTC)  # two days before Madrid's spring-forward


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(services, "clock", lambda: NOW)


def body(schedule=None, **overrides):
    data = {
        "name": "n",
        "schedule": schedule if schedule is not None else {"cron": "*/5 * * * *", "timezone": "UTC"},
        "http": {"url": "https://example.com/hook"},
    }
    data.update(overrides)
    return data


def created(owner, data):
    response = owner.post(TASKS, json.dumps(data), content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


def refused(owner, data, field):
    response = owner.post(TASKS, json.dumps(data), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert field in problem["errors"], problem
    assert field in problem["detail"]
    assert not Task.objects.exists()
    return problem


LATER = "2027-04-01T00:00:00Z"
SOONER = "2027-03-30T00:00:00Z"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (body(overlap="sometimes"), "overlap"),
        (body(overlap=None), "overlap"),
        (body(delete_after_completion="yes"), "delete_after_completion"),
        (body({"every": "90"}), "schedule.every"),
        (body({"every": "30s"}), "schedule.every"),
        (body({"every": "0m"}), "schedule.every"),
        (body({"every": "59m1d"[:2]}), "schedule.every"),  # "59": no unit
        (body({"every": "367d"}), "schedule.every"),
        (body({"every": 90}), "schedule.every"),
        (body({"every": "1h", "cron": "* * * * *"}), "schedule.every"),
        (body({"every": "1h", "run_at": LATER}), "schedule.every"),
        (body({"cron": "* * * * *", "anchor": LATER}), "schedule.anchor"),
        (body({"every": "1h", "anchor": "2027-04-01T00:00:00"}), "schedule.anchor"),  # naive
        (body({"cron": "0 9 * * *", "window_seconds": -1}), "schedule.window_seconds"),
        (body({"cron": "0 9 * * *", "window_seconds": 86401}), "schedule.window_seconds"),
        (body({"cron": "*/5 * * * *", "window_seconds": 301}), "schedule.window_seconds"),  # longer than 5 min
        (body({"every": "90m", "window_seconds": 5401}), "schedule.window_seconds"),
        (body({"cron": "0 9 * * *", "window_seconds": "60"}), "schedule.window_seconds"),
        (body({"cron": "0 9 * * *", "starts_at": LATER, "ends_at": SOONER}), "schedule.ends_at"),
        (body({"cron": "0 9 * * *", "starts_at": LATER, "ends_at": LATER}), "schedule.ends_at"),
        (body({"cron": "0 9 * * *", "ends_at": "2027-03-26T11:00:00Z"}), "schedule.ends_at"),  # no run before it
        (body({"cron": "0 9 * * *", "starts_at": "2027-04-01T00:00:00"}), "schedule.starts_at"),  # naive
        (body({"cron": "0 9 * * *", "ends_at": "2027-04-01T00:00:00"}), "schedule.ends_at"),  # naive
        (body({"cron": "0 9 * * *", "max_runs": 0}), "schedule.max_runs"),
        (body({"cron": "0 9 * * *", "max_runs": 1_000_001}), "schedule.max_runs"),
        (body({"run_at": LATER, "max_runs": 2}), "schedule.max_runs"),
        (body({"run_at": LATER, "starts_at": LATER}), "schedule.starts_at"),
        (body({"run_at": LATER, "ends_at": LATER}), "schedule.ends_at"),
    ],
)
def test_each_bad_schedule_option_is_a_400_naming_its_field(owner, data, field):
    refused(owner, data, field)


def test_overlap_and_delete_after_completion_default_to_todays_behaviour(owner):
    task = created(owner, body())
    assert (task["overlap"], task["delete_after_completion"], task["runs_scheduled"]) == ("allow", False, None)
    assert task["schedule"] == {"cron": "*/5 * * * *", "timezone": "UTC"}  # unchanged shape without options


def test_every_with_a_default_anchor_runs_on_the_anchor_grid(owner):
    task = created(owner, body({"every": "90m"}, overlap="skip"))
    assert task["overlap"] == "skip"
    assert task["schedule"] == {"every": "1h30m", "anchor": "2027-03-26T12:00:00Z", "timezone": "UTC"}
    assert task["next_run_at"] == "2027-03-26T13:30:00Z"


def test_every_with_an_anchor_in_the_past_takes_the_next_grid_instant(owner):
    task = created(owner, body({"every": "2h", "anchor": "2027-03-01T01:15:00+01:00"}))
    assert task["schedule"]["anchor"] == "2027-03-01T00:15:00Z"
    assert task["next_run_at"] == "2027-03-26T12:15:00Z"


def test_starts_at_delays_the_first_run_and_the_limits_are_shown(owner):
    schedule = {
        "cron": "0 9 * * *",
        "timezone": "Europe/Madrid",
        "starts_at": "2027-04-10T00:00:00Z",
        "ends_at": "2027-05-01T00:00:00Z",
        "max_runs": 5,
        "window_seconds": 600,
    }
    task = created(owner, body(schedule, delete_after_completion=True))
    assert task["next_run_at"] == "2027-04-10T07:00:00Z"
    assert task["schedule"] == schedule
    assert task["delete_after_completion"] is True


def test_every_with_starts_at_anchors_there_by_default(owner):
    task = created(owner, body({"every": "1d", "starts_at": "2027-04-10T06:30:00Z"}))
    assert task["schedule"]["anchor"] == "2027-04-10T06:30:00Z"
    assert task["next_run_at"] == "2027-04-10T06:30:00Z"


def test_a_patch_with_if_match_edits_the_options_and_an_export_import_carries_them(owner):
    task = created(owner, body({"every": "90m", "window_seconds": 120, "max_runs": 10}, overlap="replace"))
    url = f"{TASKS}/{task['id']}"
    etag = owner.get(url)["ETag"]

    patch = {"overlap": "buffer_one", "schedule": {"every": "45m", "anchor": task["schedule"]["anchor"]}}
    response = owner.patch(url, patch, format="json", HTTP_IF_MATCH=etag)

    assert response.status_code == 200, response.content
    edited = response.json()
    assert edited["overlap"] == "buffer_one"
    assert edited["schedule"] == {"every": "45m", "anchor": "2027-03-26T12:00:00Z", "timezone": "UTC"}
    assert edited["next_run_at"] == "2027-03-26T12:45:00Z"
    stale = owner.patch(url, {"overlap": "skip"}, format="json", HTTP_IF_MATCH=etag)
    assert stale.status_code == 412

    exported = owner.get("/v1/tasks/export")
    assert exported.status_code == 200
    lines = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines() if line]
    (line,) = [line for line in lines if line.get("name") == "n"]
    assert line["overlap"] == "buffer_one" and line["schedule"]["every"] == "45m"


def test_completed_tasks_are_listed_by_status_and_not_resumed(owner):
    done = make_task(tenant_id="tenant-a", status=TaskStatus.COMPLETED, next_run_at=None, max_runs=1)
    active = make_task(tenant_id="tenant-a")

    listed = owner.get(f"{TASKS}?status=completed").json()["results"]
    assert [task["id"] for task in listed] == [str(done.id)]
    assert listed[0]["status"] == "completed"
    assert [task["id"] for task in owner.get(f"{TASKS}?status=active").json()["results"]] == [str(active.id)]
    assert owner.get(f"{TASKS}?status=deleted").status_code == 400
    resumed = owner.post(f"{TASKS}/{done.id}/resume")
    assert resumed.status_code == 200 and resumed.json()["status"] == "completed"


def test_another_tenants_completed_task_is_not_listed(owner, other_tenant):
    make_task(tenant_id=other_tenant.tenant_id, status=TaskStatus.COMPLETED, next_run_at=None)
    assert owner.get(f"{TASKS}?status=completed").json()["results"] == []


def test_a_saved_tasks_preview_shows_the_nominal_time_and_the_call_time(owner):
    task = created(owner, body({"cron": "0 9 * * *", "timezone": "Europe/Madrid", "window_seconds": 3600}))

    runs = owner.get(f"{TASKS}/{task['id']}/preview?n=3").json()["runs"]

    saved = Task.objects.get(pk=task["id"])
    for run in runs:
        at = datetime.fromisoformat(run["at"])
        call_at = datetime.fromisoformat(run["call_at"])
        assert at.minute == 0 and at.second == 0
        assert timedelta(0) <= call_at - at < timedelta(hours=1)
        assert call_at.replace(microsecond=0) == call_time(saved.id.bytes, at, 3600).replace(microsecond=0)


def test_an_unsaved_schedule_preview_shows_call_at_without_a_window_and_none_with_one(owner):
    plain = owner.post(f"{PREVIEW}?n=2", {"every": "90m", "anchor": "2027-03-28T00:00:00Z"}, format="json").json()
    assert [(run["at"], run["call_at"]) for run in plain["runs"]] == [
        ("2027-03-28T00:00:00Z", "2027-03-28T00:00:00Z"),
        ("2027-03-28T01:30:00Z", "2027-03-28T01:30:00Z"),
    ]
    windowed = owner.post(f"{PREVIEW}?n=1", {"cron": "0 9 * * *", "window_seconds": 60}, format="json").json()
    assert windowed["runs"][0]["call_at"] is None


def test_an_every_preview_across_the_spring_forward_keeps_fixed_utc_spacing(owner):
    schedule = {"every": "90m", "anchor": "2027-03-27T22:00:00Z", "timezone": "Europe/Madrid"}
    runs = owner.post(f"{PREVIEW}?n=4", schedule, format="json").json()["runs"]
    assert [run["at"] for run in runs] == [
        "2027-03-27T22:00:00Z",
        "2027-03-27T23:30:00Z",
        "2027-03-28T01:00:00Z",
        "2027-03-28T02:30:00Z",
    ]
    assert [run["local"][11:] for run in runs] == [
        "23:00:00+01:00",
        "00:30:00+01:00",
        "03:00:00+02:00",
        "04:30:00+02:00",
    ]


def test_a_preview_stops_at_ends_at_and_max_runs(owner):
    schedule = {"cron": "0 9 * * *", "timezone": "UTC", "ends_at": "2027-03-29T09:00:00Z"}
    assert len(owner.post(f"{PREVIEW}?n=10", schedule, format="json").json()["runs"]) == 3
    schedule = {"cron": "0 9 * * *", "timezone": "UTC", "max_runs": 2}
    assert len(owner.post(f"{PREVIEW}?n=10", schedule, format="json").json()["runs"]) == 2


def test_the_history_shows_skipped_runs_with_their_reason_and_scheduled_at(owner):
    task = make_task(tenant_id="tenant-a", overlap="skip")
    scheduled = datetime(2027, 3, 26, 11, 0, tzinfo=UTC)
    make_job(task, scheduled_at=scheduled, status=JobStatus.SKIPPED, error="overlap:skip", finished_at=scheduled)

    (job,) = owner.get(f"{TASKS}/{task.id}/history").json()["results"]

    assert (job["status"], job["error"], job["scheduled_at"]) == ("skipped", "overlap:skip", "2027-03-26T11:00:00Z")


def test_the_history_filters_skipped_runs_across_the_queue_and_the_history_store(owner, store):
    task = make_task(tenant_id="tenant-a", overlap="skip")
    base = datetime(2027, 3, 26, 0, 0, tzinfo=UTC)
    for n in range(6):  # live: alternately pending and skipped
        status = JobStatus.SKIPPED if n % 2 else JobStatus.PENDING
        error = "overlap:skip" if n % 2 else None
        make_job(task, scheduled_at=base + timedelta(minutes=n), status=status, error=error)
    archived = make_record(
        tenant_id="tenant-a",
        task_id=task.id,
        scheduled_at=base - timedelta(days=1),
        status="skipped",
        error="overlap:buffer_one",
        attempt=0,
    )
    store.write_many(
        [archived, make_record(tenant_id="tenant-a", task_id=task.id, scheduled_at=base - timedelta(days=2))]
    )

    first = owner.get(f"{TASKS}/{task.id}/history?status=skipped&limit=2").json()
    second = owner.get(f"{TASKS}/{task.id}/history?status=skipped&limit=2&cursor={first['next_cursor']}").json()

    seen = first["results"] + second["results"]
    assert [job["scheduled_at"] for job in seen] == [
        "2027-03-26T00:05:00Z",
        "2027-03-26T00:03:00Z",
        "2027-03-26T00:01:00Z",
        "2027-03-25T00:00:00Z",
    ]
    assert {job["status"] for job in seen} == {"skipped"}
    assert [job["archived"] for job in seen] == [False, False, False, True]
    assert seen[-1]["error"] == "overlap:buffer_one"
    third = owner.get(f"{TASKS}/{task.id}/history?status=skipped&limit=2&cursor={second['next_cursor']}").json()
    assert (third["results"], third["next_cursor"]) == ([], None)
    assert owner.get(f"{TASKS}/{task.id}/history?status=sometimes").status_code == 400


def test_runs_are_counted_toward_max_runs_from_when_an_edit_sets_it(owner):
    task = created(owner, body())
    Task.objects.filter(pk=task["id"]).update(runs_scheduled=7)  # stale: never counted without limits
    url = f"{TASKS}/{task['id']}"

    patch = {"schedule": {"cron": "*/5 * * * *", "timezone": "UTC", "max_runs": 3}}
    edited = owner.patch(url, patch, format="json", HTTP_IF_MATCH=owner.get(url)["ETag"]).json()

    assert (edited["runs_scheduled"], edited["schedule"]["max_runs"]) == (0, 3)
