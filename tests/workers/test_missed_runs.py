"""A late scheduler honours each task's missed-runs policy: tasks whose next_run_at is hours in the past."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobs.models import Job
from tasks.models import Task
from tests.factories import db_now, make_task
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db

HOURS_DOWN = 3


def _catch_up(scheduler: Scheduler) -> int:
    """Tick like the loop does after an outage (again at once while behind); the ticks it took."""
    for ticks in range(1, 1000):
        if not scheduler.tick().more_work:
            return ticks
    raise AssertionError("the scheduler never caught up")


def _outage():
    """Three minutely tasks, one per policy, last scheduled three hours ago (180 runs missed each)."""
    now = db_now()
    start = (now - timedelta(hours=HOURS_DOWN)).replace(second=0, microsecond=0)
    tasks = {policy: make_task(missed_runs=policy, next_run_at=start) for policy in ("all", "latest", "skip")}
    return now, start, tasks


def _jobs(task):
    return list(Job.objects.filter(task_id=task.pk).order_by("scheduled_at").values_list("scheduled_at", flat=True))


def test_after_an_outage_each_policy_replays_what_it_says():
    now, _, tasks = _outage()
    _catch_up(Scheduler(lookahead_seconds=0, missed_runs_max=20))
    latest_missed = now.replace(second=0, microsecond=0)
    # all: only the last 20 missed runs, one minute apart, ending with the latest.
    replayed = _jobs(tasks["all"])
    assert len(replayed) == 20
    assert replayed[-1] == latest_missed and replayed[0] == latest_missed - timedelta(minutes=19)
    # latest: one job, for the most recent missed run.
    assert _jobs(tasks["latest"]) == [latest_missed]
    # skip: none.
    assert _jobs(tasks["skip"]) == []
    # Every task is back on its schedule: next run in the future, never skipped from there.
    for task in tasks.values():
        task.refresh_from_db()
        assert task.next_run_at == latest_missed + timedelta(minutes=1)


def test_all_within_the_cap_replays_every_missed_run_as_the_seed_did():
    _, start, tasks = _outage()
    _catch_up(Scheduler(lookahead_seconds=0, missed_runs_max=1000))
    assert len(_jobs(tasks["all"])) == HOURS_DOWN * 60 + 1 == len(set(_jobs(tasks["all"])))
    assert _jobs(tasks["all"])[0] == start


def test_a_missed_one_shot_runs_late_unless_it_skips():
    past = db_now() - timedelta(hours=2)
    late = make_task(run_at=past, missed_runs="latest")
    skipped = make_task(run_at=past, missed_runs="skip")
    _catch_up(Scheduler(lookahead_seconds=0))
    assert len(_jobs(late)) == 1 and _jobs(skipped) == []
    assert Task.objects.get(pk=skipped.pk).next_run_at is None  # it had its one chance


def test_a_run_reached_within_the_grace_is_not_missed():
    due = db_now() - timedelta(seconds=20)
    task = make_task(missed_runs="skip", next_run_at=due)
    Scheduler(lookahead_seconds=0, missed_after_seconds=60).tick()
    assert len(_jobs(task)) == 1


def test_the_policy_is_set_and_read_through_the_api(tenant_client, fake_dns):
    client = tenant_client("tenant-a")
    body = {
        "name": "nightly",
        "schedule": {"cron": "0 3 * * *", "timezone": "UTC"},
        "http": {"url": "https://example.com/hook"},
        "missed_runs": "latest",
        "auto_pause_after": 3,
    }
    created = client.post("/v1/tasks", body, format="json")
    assert created.status_code == 201, created.content
    assert (created.json()["missed_runs"], created.json()["auto_pause_after"]) == ("latest", 3)
    patched = client.patch(
        f"/v1/tasks/{created.json()['id']}", {"missed_runs": "skip"}, format="json", HTTP_IF_MATCH=created["ETag"]
    )
    assert patched.json()["missed_runs"] == "skip"
    for field, value in [("missed_runs", "some"), ("auto_pause_after", -1), ("auto_pause_after", 1001)]:
        refused = client.post("/v1/tasks", {**body, field: value}, format="json")
        assert refused.status_code == 400 and field in refused.json()["errors"]
