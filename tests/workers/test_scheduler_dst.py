"""Daylight-saving days through the real tick: the runs DESIGN.md specifies, as jobs.

Spring-forward: a wall time in the gap runs once, at the first instant after it.
Fall-back: a fixed-hour entry runs once, at the first occurrence; an entry with a
wildcard or step in its minute or hour field fires at every real slot, evenly in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from jobs.models import Job
from tests.factories import db_now, make_task
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def scheduled_runs(*, cron: str, zone: str, first: datetime, ticks: int) -> list[datetime]:
    """Tick `ticks` times (one run each) from `first`; return the jobs' times, then the task's next run."""
    task = make_task(cron_expression=cron, timezone=zone, next_run_at=first)
    now = db_now()
    # These days are past, so every run is due; the lookahead keeps it so on a machine whose clock is earlier.
    # Replayed as if on time: this is about DST, not missed runs (tests/workers/test_missed_runs.py).
    scheduler = Scheduler(
        lookahead_seconds=max(0.0, (first - now).total_seconds() + 3 * 86400), missed_after_seconds=10**10
    )
    for _ in range(ticks):
        assert scheduler.tick().selected == 1
    task.refresh_from_db()
    made = Job.objects.filter(task_id=task.id).order_by("scheduled_at").values_list("scheduled_at", flat=True)
    return [*made, task.next_run_at]


def test_spring_forward_runs_a_fixed_time_in_the_gap_once_at_the_end_of_the_gap():
    # Madrid, 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not exist that day.
    runs = scheduled_runs(cron="30 2 * * *", zone="Europe/Madrid", first=utc(2026, 3, 28, 1, 30), ticks=2)

    assert runs == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]  # 02:30 CEST


def test_spring_forward_collapses_the_gaps_slots_into_one_run():
    runs = scheduled_runs(cron="*/30 * * * *", zone="Europe/Madrid", first=utc(2026, 3, 29, 0, 30), ticks=2)

    # 01:30 CET, then 02:00/02:30 (missing) and 03:00 CEST are one instant, then 03:30 CEST.
    assert runs == [utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30)]


def test_fall_back_runs_a_fixed_hour_entry_once_at_the_first_occurrence():
    # Madrid, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens twice.
    runs = scheduled_runs(cron="30 2 * * *", zone="Europe/Madrid", first=utc(2026, 10, 24, 0, 30), ticks=2)

    assert runs == [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


def test_fall_back_fires_a_stepped_entry_at_every_real_slot_evenly_in_utc():
    runs = scheduled_runs(cron="*/30 2 * * *", zone="Europe/Madrid", first=utc(2026, 10, 25, 0, 0), ticks=4)

    assert runs == [
        utc(2026, 10, 25, 0, 0),
        utc(2026, 10, 25, 0, 30),
        utc(2026, 10, 25, 1, 0),
        utc(2026, 10, 25, 1, 30),
        utc(2026, 10, 26, 1, 0),  # the next day's 02:00 CET
    ]
    assert {b - a for a, b in pairwise(runs[:4])} == {timedelta(minutes=30)}


def test_fall_back_in_new_york_runs_a_fixed_entry_in_the_repeated_hour_once():
    # New York, 2026-11-01: 02:00 EDT becomes 01:00 EST; 01:30 happens twice.
    runs = scheduled_runs(cron="30 1 * * *", zone="America/New_York", first=utc(2026, 10, 31, 5, 30), ticks=2)

    assert runs == [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]
