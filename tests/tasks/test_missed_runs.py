"""The missed-runs policy, pure: all (capped), latest, skip, one-shots, and tasks far behind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tasks.schedule.missed import Plan, WalkLimitReached, plan_due_run, planned_runs

T0 = datetime(2027, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def minutely(t):
    return t.replace(second=0, microsecond=0) + MINUTE


def one_shot(_):
    return None


def plan(policy, prev, now, next_run=minutely, replay_max=5, scan_max=20):
    return plan_due_run(
        policy=policy, prev=prev, now=now, next_run=next_run, missed_after=MINUTE, replay_max=replay_max,
        scan_max=scan_max,
    )  # fmt: skip


@pytest.mark.parametrize("policy", ["all", "latest", "skip"])
def test_a_run_reached_on_time_is_scheduled_as_always(policy):
    assert plan(policy, T0, T0 + 30 * timedelta(seconds=1)) == Plan(T0, T0 + MINUTE)
    assert plan(policy, T0, T0 - timedelta(seconds=5)) == Plan(T0, T0 + MINUTE)  # inside the lookahead


def test_all_replays_a_few_missed_runs_one_per_tick():
    now = T0 + 3 * MINUTE + timedelta(seconds=30)  # T0 .. T0+3m missed: 4 runs, within the cap of 5
    assert plan("all", T0, now) == Plan(T0, T0 + MINUTE)


def test_all_replays_only_the_last_replay_max_when_more_were_missed():
    now = T0 + 10 * MINUTE + timedelta(seconds=30)  # runs T0 .. T0+10m: 11 missed
    # The last 5 are T0+6m .. T0+10m: the first job is T0+6m, then T0+7m next tick.
    assert plan("all", T0, now) == Plan(T0 + 6 * MINUTE, T0 + 7 * MINUTE)
    # And from there the task is within the cap, so it replays as always.
    assert plan("all", T0 + 7 * MINUTE, now) == Plan(T0 + 7 * MINUTE, T0 + 8 * MINUTE)


def test_all_far_behind_moves_on_in_bounded_steps_and_ends_with_the_last_replay_max():
    now = T0 + 100 * MINUTE + timedelta(seconds=30)  # 101 missed runs, scans of at most 20
    prev, steps = T0, 0
    while True:
        step = plan("all", prev, now)
        steps += 1
        if step.scheduled_at is not None:
            break
        assert step.next_run_at > prev
        prev = step.next_run_at
    assert step == Plan(T0 + 96 * MINUTE, T0 + 97 * MINUTE) and steps > 1


def test_latest_creates_one_job_for_the_most_recent_missed_run():
    now = T0 + 10 * MINUTE + timedelta(seconds=30)
    assert plan("latest", T0, now) == Plan(T0 + 10 * MINUTE, T0 + 11 * MINUTE)


def test_latest_far_behind_walks_then_creates_the_latest_only():
    now = T0 + 50 * MINUTE + timedelta(seconds=30)
    first = plan("latest", T0, now)
    assert first.scheduled_at is None and first.next_run_at == T0 + 20 * MINUTE
    prev = first.next_run_at
    while (step := plan("latest", prev, now)).scheduled_at is None:
        prev = step.next_run_at
    assert step == Plan(T0 + 50 * MINUTE, T0 + 51 * MINUTE)


def test_skip_creates_nothing_and_continues_at_the_next_future_run():
    now = T0 + 10 * MINUTE + timedelta(seconds=30)
    assert plan("skip", T0, now) == Plan(None, T0 + 11 * MINUTE)


@pytest.mark.parametrize(
    ("policy", "expected"), [("all", Plan(T0, None)), ("latest", Plan(T0, None)), ("skip", Plan(None, None))]
)
def test_a_missed_one_shot_runs_late_unless_the_policy_is_skip(policy, expected):
    assert plan(policy, T0, T0 + timedelta(hours=3), next_run=one_shot) == expected


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        plan("sometimes", T0, T0)
    with pytest.raises(ValueError):
        plan("all", T0, T0, replay_max=20, scan_max=20)


def planned(policy, next_run_at, now, *, next_run=minutely, count=5, walk_max=1000, replay_max=3):
    return planned_runs(
        policy=policy, next_run_at=next_run_at, now=now, next_run=next_run, missed_after=MINUTE,
        replay_max=replay_max, count=count, walk_max=walk_max,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "first"),
    [
        ("all", T0 + 7 * MINUTE),  # the last 3 of the 10 missed runs (T0 .. T0+9m), then on schedule
        ("latest", T0 + 9 * MINUTE),  # the most recent missed run
        ("skip", T0 + 10 * MINUTE),  # the first run in the future
    ],
)
def test_planned_runs_are_what_the_ticks_fire_the_skipped_ones_left_out(policy, first):
    now = T0 + 9 * MINUTE + timedelta(seconds=30)
    assert planned(policy, T0, now) == [first + i * MINUTE for i in range(5)]


def test_planned_runs_of_a_task_on_time_start_at_its_next_run():
    assert planned("skip", T0, T0 - MINUTE, count=3) == [T0, T0 + MINUTE, T0 + 2 * MINUTE]


def test_planned_runs_of_a_one_shot_stop_after_its_run_or_skip_it():
    late = T0 + 10 * MINUTE
    assert planned("latest", T0, late, next_run=one_shot) == [T0]
    assert planned("skip", T0, late, next_run=one_shot) == []


def test_planned_runs_stop_at_the_walk_limit_with_what_they_planned():
    calls = []

    def counted(t):
        calls.append(t)
        return minutely(t)

    with pytest.raises(WalkLimitReached) as stopped:
        planned("skip", T0, T0 + 10_000 * MINUTE, next_run=counted, walk_max=50)
    assert stopped.value.runs == [] and len(calls) == 50
    # Each distinct next run is computed once, however often the planner's walks ask for it.
    calls.clear()
    assert len(planned("all", T0, T0 + 9 * MINUTE + timedelta(seconds=30), next_run=counted, count=5)) == 5
    assert len(calls) == len(set(calls))
