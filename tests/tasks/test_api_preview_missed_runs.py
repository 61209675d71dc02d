"""A saved task's preview says what a scheduler that is behind will do: its missed_runs policy applied."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Job
from tasks import services
from tests.factories import db_now, make_task
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db

NOW = datetime(2027, 3, 26, 12, 30, tzinfo=UTC)
HOURLY = "0 * * * *"


@pytest.fixture
def client(tenant_client):
    return tenant_client("tenant-a")


@pytest.fixture
def half_past_noon(monkeypatch):
    monkeypatch.setattr(services, "clock", lambda: NOW)


def _at(hour: int) -> str:
    return f"2027-03-26T{hour:02d}:00:00Z"


def _preview(client, task, n=5):
    response = client.get(f"/v1/tasks/{task.pk}/preview?n={n}")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    ("policy", "runs"),
    [
        # all: every missed run (07:00-12:00) replayed, late, then the schedule as ever.
        ("all", [(7, True), (8, True), (9, True), (10, True), (11, True), (12, True), (13, False), (14, False)]),
        # latest: only the most recent missed run, late; 07:00-11:00 are skipped, not listed.
        ("latest", [(12, True), (13, False), (14, False), (15, False), (16, False), (17, False), (18, False)]),
        # skip: no missed run; the first run listed is the first in the future.
        ("skip", [(13, False), (14, False), (15, False), (16, False), (17, False), (18, False), (19, False)]),
    ],
)
def test_a_behind_tasks_preview_lists_only_the_runs_its_policy_fires(client, half_past_noon, policy, runs):
    task = make_task(cron_expression=HOURLY, missed_runs=policy, next_run_at=datetime(2027, 3, 26, 7, tzinfo=UTC))
    body = _preview(client, task, n=len(runs))
    assert body["behind"] is True
    assert [(run["at"], run["late"]) for run in body["runs"]] == [(_at(hour), late) for hour, late in runs]


def test_all_lists_only_the_last_missed_runs_the_cap_replays(client, half_past_noon, settings):
    settings.SCHEDULER_MISSED_RUNS_MAX = 3
    task = make_task(cron_expression=HOURLY, missed_runs="all", next_run_at=datetime(2027, 3, 26, 7, tzinfo=UTC))
    runs = _preview(client, task)["runs"]
    assert [run["at"] for run in runs] == [_at(10), _at(11), _at(12), _at(13), _at(14)]
    assert [run["late"] for run in runs] == [True, True, True, False, False]


@pytest.mark.parametrize("policy", ["all", "latest", "skip"])
def test_a_task_on_time_is_not_behind_and_lists_its_runs_from_its_next_run(client, half_past_noon, policy):
    # Due 30 s ago: not missed yet (SCHEDULER_MISSED_AFTER_SECONDS is 60), so every policy fires it.
    task = make_task(missed_runs=policy, next_run_at=NOW - timedelta(seconds=30))
    body = _preview(client, task, n=2)
    assert body["behind"] is False
    assert [(run["at"], run["late"]) for run in body["runs"]] == [
        ("2027-03-26T12:29:30Z", True),
        ("2027-03-26T12:30:00Z", False),
    ]


@pytest.mark.parametrize(("policy", "listed"), [("all", True), ("latest", True), ("skip", False)])
def test_a_missed_one_shot_is_listed_late_unless_it_skips(client, half_past_noon, policy, listed):
    run_at = datetime(2027, 3, 26, 9, tzinfo=UTC)
    task = make_task(run_at=run_at, missed_runs=policy)
    body = _preview(client, task)
    assert body["behind"] is True
    assert [(run["at"], run["late"]) for run in body["runs"]] == ([(_at(9), True)] if listed else [])


@pytest.mark.parametrize("policy", ["all", "latest", "skip"])
def test_the_preview_lists_exactly_the_jobs_the_scheduler_then_makes(client, policy):
    now = db_now()
    start = (now - timedelta(hours=2)).replace(second=0, microsecond=0)
    task = make_task(missed_runs=policy, next_run_at=start)  # every minute, 120 runs behind
    late = [datetime.fromisoformat(run["at"]) for run in _preview(client, task, n=100)["runs"] if run["late"]]

    scheduler = Scheduler(lookahead_seconds=0, missed_runs_max=100)
    while scheduler.tick().more_work:
        pass

    made = list(Job.objects.filter(task=task).order_by("scheduled_at").values_list("scheduled_at", flat=True))
    assert made == late
    assert len(made) == {"all": 100, "latest": 1, "skip": 0}[policy]


@pytest.mark.parametrize("policy", ["all", "skip"])
def test_a_task_very_far_behind_is_previewed_in_bounded_time(client, half_past_noon, policy):
    # Every minute, 30 days behind: 43,200 missed runs, more than a preview follows (PREVIEW_WALK_MAX).
    task = make_task(missed_runs=policy, next_run_at=NOW - timedelta(days=30))
    started = time.perf_counter()
    body = _preview(client, task, n=3)
    assert time.perf_counter() - started < 10
    assert body["behind"] is True and all(run["late"] for run in body["runs"])
