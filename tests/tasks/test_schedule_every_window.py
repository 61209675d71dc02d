"""The pure rules of intervals, windows and run limits (tasks.schedule.every, .window, .bounds)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from domain.ids import new_id
from tasks.schedule import ScheduleError
from tasks.schedule.bounds import bound_plan, first_run_from
from tasks.schedule.every import first_every_run, format_every, parse_every
from tasks.schedule.missed import Plan
from tasks.schedule.runs import next_run_after, parse_timezone
from tasks.schedule.window import call_time, check_window_fits, shortest_gap, window_offset

T0 = datetime(2027, 1, 1, 9, 0)


@pytest.mark.parametrize(
    ("text", "seconds", "shown"), [("90m", 5400, "1h30m"), ("2h", 7200, "2h"), ("1d1m", 86460, "1d1m")]
)
def test_every_reads_units_and_shows_its_shortest_form(text, seconds, shown):
    assert parse_every(text) == seconds
    assert format_every(seconds) == shown


@pytest.mark.parametrize("text", ["", "1", "1s", "0m", "59s", "1h 30m", "1H", "367d", "-5m", "1.5h", "9" * 40 + "m"])
def test_every_refuses_what_is_not_a_bounded_interval(text):
    with pytest.raises(ScheduleError) as caught:
        parse_every(text)
    assert caught.value.field == "every"


def test_the_first_every_run_is_the_next_grid_instant_or_a_future_anchor():
    anchor = datetime(2027, 1, 1, 0, 0, tzinfo=UTC)
    assert first_every_run(every_seconds=3600, anchor=anchor, after=anchor) == anchor + timedelta(hours=1)
    after = anchor + timedelta(hours=5, minutes=1)
    assert first_every_run(every_seconds=3600, anchor=anchor, after=after) == anchor + timedelta(hours=6)
    assert first_every_run(every_seconds=3600, anchor=anchor, after=anchor - timedelta(days=3)) == anchor


def test_window_offsets_are_deterministic_inside_the_window_and_spread_evenly():
    ids = [new_id().bytes for _ in range(30_000)]
    offsets = [window_offset(task_id, T0, 60) for task_id in ids]
    assert offsets == [window_offset(task_id, T0, 60) for task_id in ids]
    assert all(timedelta(0) <= offset < timedelta(seconds=60) for offset in offsets)
    per_second = Counter(int(offset.total_seconds()) for offset in offsets)
    assert len(per_second) == 60 and max(per_second.values()) <= 1.3 * 30_000 / 60
    assert window_offset(ids[0], T0, 0) == timedelta(0)
    assert call_time(ids[0], T0, 60) == T0 + offsets[0]
    # Another run of the same task gets its own offset (most tasks: a hash collision is possible).
    assert sum(window_offset(i, T0, 60) != window_offset(i, T0 + timedelta(days=1), 60) for i in ids[:100]) > 90


def test_the_shortest_gap_of_a_cron_includes_the_dst_day_and_bounds_the_window():
    zone = parse_timezone("Europe/Madrid")
    first = datetime(2027, 1, 1, 1, 30, tzinfo=UTC)

    def daily(prev):
        return next_run_after("30 2 * * *", zone, prev)

    gap = shortest_gap(first, daily)
    # 02:30 does not exist on the spring-forward day: the run is at 03:00 CEST, 23.5 h after the day before's.
    assert gap == timedelta(hours=23, minutes=30)
    check_window_fits(84600, gap)
    with pytest.raises(ScheduleError) as caught:
        check_window_fits(86400, gap)
    assert caught.value.field == "window_seconds"


def test_bounds_cut_the_plan_at_ends_at_and_max_runs():
    later = T0 + timedelta(minutes=1)
    assert bound_plan(Plan(T0, later), ends_at=None, max_runs=None, runs_scheduled=0) == (Plan(T0, later), False)
    assert bound_plan(Plan(T0, later), ends_at=T0, max_runs=None, runs_scheduled=0) == (Plan(T0, None), True)
    assert bound_plan(Plan(later, None), ends_at=T0, max_runs=None, runs_scheduled=0) == (Plan(None, None), True)
    assert bound_plan(Plan(T0, later), ends_at=None, max_runs=3, runs_scheduled=2) == (Plan(T0, None), True)
    assert bound_plan(Plan(T0, later), ends_at=None, max_runs=3, runs_scheduled=3) == (Plan(None, None), True)
    assert first_run_from(T0, T0 + timedelta(days=1)) == T0 + timedelta(days=1) - timedelta(microseconds=1)
    assert first_run_from(T0, None) == T0
