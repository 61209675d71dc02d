"""Tests for tasks.schedule.runs: the next-run maths, pure, no Django.

DST rules are pinned on real 2026 transition days, and walks across every
2026-2027 transition of a few zones are compared with a minute-by-minute oracle
that reads the rules straight from the design (no croniter stepping).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.schedule import (
    NextRunMemo,
    ScheduleError,
    first_run,
    next_run_after,
    next_run_for,
    validate_cron,
    validate_run_at,
)
from tasks.schedule import runs as schedule_runs
from tasks.schedule.cron import cron_schedule

MADRID = ZoneInfo("Europe/Madrid")
NEW_YORK = ZoneInfo("America/New_York")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def runs(expr: str, tz: ZoneInfo, after: datetime, count: int) -> list[datetime]:
    """Walk ``count`` runs by feeding each result back, as the scheduler does."""
    found = []
    for _ in range(count):
        after = next_run_after(expr, tz, after)
        found.append(after)
    return found


@pytest.fixture(autouse=True)
def _no_remembered_walk() -> Iterator[None]:
    """Each test starts with no remembered walk, so croniter's step counts are its own."""
    schedule_runs._LAST_WALKS.clear()
    yield
    schedule_runs._LAST_WALKS.clear()


# --- the oracle ---------------------------------------------------------------


@cache
def _fields(expr: str) -> tuple[list[set[int] | None], bool]:
    """Return (values per field, None for '*') and whether the entry is fixed-time."""
    five = cron_schedule(expr).cron.expressions
    expanded, nth = croniter.expand(" ".join(five))
    assert not nth, "the oracle does not model '#' or 'L'"
    values = [None if field == ["*"] else {int(v) for v in field} for field in expanded]
    fixed = not any(char in five[0] + five[1] for char in "*/")
    return values, fixed


def _matches(expr: str, wall: datetime) -> bool:
    (minutes, hours, days, months, weekdays), _ = _fields(expr)
    if minutes is not None and wall.minute not in minutes:
        return False
    if hours is not None and wall.hour not in hours:
        return False
    if months is not None and wall.month not in months:
        return False
    day_ok = days is None or wall.day in days
    weekday_ok = weekdays is None or (wall.isoweekday() % 7) in weekdays
    if days is not None and weekdays is not None:
        return day_ok or weekday_ok  # cron's OR rule when both are restricted
    return day_ok and weekday_ok


def oracle_runs(expr: str, tz: ZoneInfo, start: datetime, end: datetime) -> Iterator[datetime]:
    """Yield every run in (start, end], scanning UTC minute by minute.

    An instant fires if its wall time matches (for a fixed entry: not in the
    second pass of an overlap), or if it is the first instant after a gap in
    which some wall time matches.
    """
    _, fixed = _fields(expr)
    instant = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    previous_wall = (instant - timedelta(minutes=1)).astimezone(tz).replace(tzinfo=None)
    while instant <= end:
        local = instant.astimezone(tz)
        wall = local.replace(tzinfo=None, fold=0)
        fires = _matches(expr, wall) and not (fixed and local.fold == 1)
        gap_wall = previous_wall + timedelta(minutes=1)
        while not fires and gap_wall < wall:  # wall times the clock jumped over
            fires = _matches(expr, gap_wall)
            gap_wall += timedelta(minutes=1)
        if fires:
            yield instant
        previous_wall = wall
        instant += timedelta(minutes=1)


def oracle_next(expr: str, tz: ZoneInfo, after: datetime) -> datetime:
    return next(oracle_runs(expr, tz, after, after + timedelta(days=3)))


# --- next_run_after refuses what the syntax refuses ------------------------------


def test_an_invalid_expression_is_refused_when_computing_a_run() -> None:
    with pytest.raises(ScheduleError):
        next_run_after("0 0 30 2 *", MADRID, utc(2026, 1, 1))


# --- next_run_after away from transitions ---------------------------------------


def test_cron_fields_are_read_in_the_zones_wall_time() -> None:
    assert next_run_after("0 9 * * *", MADRID, utc(2026, 7, 1)) == utc(2026, 7, 1, 7, 0)  # CEST
    assert next_run_after("0 9 * * *", MADRID, utc(2026, 12, 1)) == utc(2026, 12, 1, 8, 0)  # CET


def test_the_next_run_is_strictly_after_and_on_a_whole_minute() -> None:
    assert next_run_after("0 9 * * *", MADRID, utc(2026, 7, 1, 7, 0)) == utc(2026, 7, 2, 7, 0)
    run = next_run_after("* * * * *", MADRID, datetime(2026, 7, 1, 7, 0, 30, 500, tzinfo=UTC))
    assert run == utc(2026, 7, 1, 7, 1)
    assert (run.second, run.microsecond, run.tzinfo) == (0, 0, UTC)


def test_an_aware_non_utc_after_gives_a_utc_result() -> None:
    run = next_run_after("0 9 * * *", MADRID, datetime(2026, 7, 1, 10, 0, tzinfo=MADRID))
    assert run == utc(2026, 7, 2, 7, 0)
    assert run.tzinfo is UTC


def test_a_naive_after_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        next_run_after("0 9 * * *", MADRID, datetime(2026, 7, 1))


@pytest.fixture
def croniter_steps(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count croniter.get_next calls made from now on."""
    steps = Counter[str]()
    real_get_next = croniter.get_next

    def counting_get_next(self: croniter, *args: object, **kwargs: object) -> object:
        steps["get_next"] += 1
        return real_get_next(self, *args, **kwargs)

    monkeypatch.setattr(croniter, "get_next", counting_get_next)
    return steps


def test_a_plain_expression_away_from_transitions_costs_one_croniter_step(croniter_steps: Counter[str]) -> None:
    for expr in ("*/5 9-17 * * MON-FRI", "0 9 * * *"):
        validate_cron(expr)  # parse and probe outside the count
    croniter_steps.clear()
    assert next_run_after("*/5 9-17 * * MON-FRI", MADRID, utc(2026, 6, 3, 10, 0)) == utc(2026, 6, 3, 10, 5)
    assert next_run_after("0 9 * * *", MADRID, utc(2026, 6, 3, 7, 0)) == utc(2026, 6, 4, 7, 0)
    assert croniter_steps["get_next"] == 2


def test_a_walk_from_the_second_pass_of_an_overlap_stops_at_the_first_slot(croniter_steps: Counter[str]) -> None:
    validate_cron("* * * * *")
    croniter_steps.clear()
    # 06:10Z is 01:10 EST; first-pass instants of later wall times are all past.
    assert next_run_after("* * * * *", NEW_YORK, utc(2026, 11, 1, 6, 10)) == utc(2026, 11, 1, 6, 11)
    assert croniter_steps["get_next"] == 1


# --- spring forward ----------------------------------------------------------------


def test_a_run_in_the_madrid_spring_gap_happens_when_the_gap_ends() -> None:
    # 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00Z); 02:30 does not exist.
    assert runs("30 2 * * *", MADRID, utc(2026, 3, 28, 12), 2) == [utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]


def test_a_run_in_the_new_york_spring_gap_happens_when_the_gap_ends() -> None:
    # 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00Z).
    assert runs("30 2 * * *", NEW_YORK, utc(2026, 3, 7, 12), 2) == [utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]


def test_gap_slots_and_a_real_slot_at_the_gap_end_collapse_into_one_run() -> None:
    # 02:00, 02:15, 02:30, 02:45 do not exist; 03:00 CEST is real; all are 01:00Z.
    assert runs("*/15 2-3 * * *", MADRID, utc(2026, 3, 29, 0), 3) == [
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 1, 15),
        utc(2026, 3, 29, 1, 30),
    ]


def test_an_hourly_entry_does_not_fire_twice_at_the_end_of_the_gap() -> None:
    assert runs("@hourly", NEW_YORK, utc(2026, 3, 8, 5, 30), 3) == [
        utc(2026, 3, 8, 6, 0),  # 01:00 EST
        utc(2026, 3, 8, 7, 0),  # 03:00 EDT (02:00 folded into it)
        utc(2026, 3, 8, 8, 0),  # 04:00 EDT
    ]


def test_a_half_hour_gap_moves_the_run_to_the_half_hour_in_lord_howe() -> None:
    # 2026-10-04: 02:00 +10:30 jumps to 02:30 +11:00 (15:30Z on the 3rd).
    assert runs("15 2 * * *", LORD_HOWE, utc(2026, 10, 3), 2) == [utc(2026, 10, 3, 15, 30), utc(2026, 10, 4, 15, 15)]


def test_a_midnight_run_in_a_midnight_gap_happens_at_one_in_santiago() -> None:
    # 2026-09-06: 00:00 -04 jumps to 01:00 -03 (04:00Z); the day has no midnight.
    assert runs("@daily", ZoneInfo("America/Santiago"), utc(2026, 9, 5, 12), 2) == [
        utc(2026, 9, 6, 4, 0),
        utc(2026, 9, 7, 3, 0),
    ]


# --- fall back -------------------------------------------------------------------


def test_croniter_alone_fires_a_fixed_hour_entry_twice_on_fall_back_day() -> None:
    # Why this module exists: the library gets the rule wrong.
    walk = croniter("30 1 * * *", datetime(2026, 10, 31, 12, tzinfo=NEW_YORK), ret_type=datetime)
    assert [walk.get_next().astimezone(UTC) for _ in range(2)] == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 6, 30)]


def test_fixed_hour_entry_runs_once_on_fall_back_day() -> None:
    # 2026-11-01: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    assert runs("30 1 * * *", NEW_YORK, utc(2026, 10, 31, 12), 2) == [utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_fixed_hour_entry_runs_once_on_madrid_fall_back_day() -> None:
    # 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    assert runs("30 2 * * *", MADRID, utc(2026, 10, 24, 12), 2) == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


def test_a_fixed_list_of_hours_runs_each_slot_once_on_fall_back_day() -> None:
    assert runs("0 1,2 * * *", NEW_YORK, utc(2026, 11, 1, 0), 3) == [
        utc(2026, 11, 1, 5, 0),  # 01:00 EDT
        utc(2026, 11, 1, 7, 0),  # 02:00 EST; 01:00 EST is skipped
        utc(2026, 11, 2, 6, 0),
    ]


def test_stepped_minute_entry_fires_at_every_real_slot_on_fall_back_day() -> None:
    assert runs("*/30 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 30), 5) == [
        utc(2026, 11, 1, 5, 0),
        utc(2026, 11, 1, 5, 30),
        utc(2026, 11, 1, 6, 0),
        utc(2026, 11, 1, 6, 30),
        utc(2026, 11, 1, 7, 0),
    ]


def test_wildcard_hour_entry_fires_in_both_repeated_hours() -> None:
    assert runs("15 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 30), 3) == [
        utc(2026, 11, 1, 5, 15),  # 01:15 EDT
        utc(2026, 11, 1, 6, 15),  # 01:15 EST
        utc(2026, 11, 1, 7, 15),  # 02:15 EST
    ]
    assert runs("@hourly", MADRID, utc(2026, 10, 24, 23, 30), 3) == [
        utc(2026, 10, 25, 0, 0),  # 02:00 CEST
        utc(2026, 10, 25, 1, 0),  # 02:00 CET
        utc(2026, 10, 25, 2, 0),  # 03:00 CET
    ]


def test_a_walk_from_the_first_pass_still_sees_the_second_pass() -> None:
    # 05:45Z is 01:45 EDT; 01:00 EST (06:00Z) has an earlier wall time.
    assert next_run_after("0 * * * *", NEW_YORK, utc(2026, 11, 1, 5, 45)) == utc(2026, 11, 1, 6, 0)
    assert next_run_after("0 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 0)) == utc(2026, 11, 1, 5, 0)


def test_a_walk_from_the_second_pass_continues_in_it() -> None:
    # 06:10Z is 01:10 EST.
    assert next_run_after("*/15 * * * *", NEW_YORK, utc(2026, 11, 1, 6, 10)) == utc(2026, 11, 1, 6, 15)
    assert next_run_after("30 1 * * *", NEW_YORK, utc(2026, 11, 1, 6, 10)) == utc(2026, 11, 2, 6, 30)


def test_a_half_hour_overlap_repeats_wildcard_slots_only_in_lord_howe() -> None:
    # 2026-04-05: 02:00 +11:00 falls back to 01:30 +10:30 (15:00Z on the 4th).
    assert runs("*/30 * * * *", LORD_HOWE, utc(2026, 4, 4, 14, 0), 4) == [
        utc(2026, 4, 4, 14, 30),  # 01:30 +11
        utc(2026, 4, 4, 15, 0),  # 01:30 +10:30
        utc(2026, 4, 4, 15, 30),  # 02:00 +10:30
        utc(2026, 4, 4, 16, 0),
    ]
    assert runs("45 1 * * *", LORD_HOWE, utc(2026, 4, 4, 12), 2) == [utc(2026, 4, 4, 14, 45), utc(2026, 4, 5, 15, 15)]


# --- walks across transitions ----------------------------------------------------------

ORACLE_EXPRESSIONS = [
    "30 2 * * *",
    "30 1 * * *",
    "0 0 * * *",
    "59 23 * * *",
    "45 1,2 * * *",
    "0-10 2 * * *",
    "*/30 * * * *",
    "15 * * * *",
    "0 */2 * * *",
    "*/7 1-3 * * *",
    "20/20 * * * *",
    "@hourly",
]
DST_ZONES = [
    "Europe/Madrid",
    "America/New_York",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "America/Santiago",
    "Antarctica/Troll",
]


def transitions(tz: ZoneInfo) -> list[datetime]:
    """Return the offset changes of 2026-2027, to the minute."""
    found = []
    instant = utc(2026, 1, 1)
    offset = instant.astimezone(tz).utcoffset()
    while instant.year < 2028:
        step = instant + timedelta(minutes=30)
        if step.astimezone(tz).utcoffset() != offset:
            while instant.astimezone(tz).utcoffset() == offset:
                instant += timedelta(minutes=1)
            offset = instant.astimezone(tz).utcoffset()
            found.append(instant)
        instant = step
    return found


TRANSITIONS = {name: transitions(ZoneInfo(name)) for name in DST_ZONES}


def test_every_dst_zone_in_the_pools_has_four_transitions() -> None:
    assert {name: len(found) for name, found in TRANSITIONS.items()} == dict.fromkeys(DST_ZONES, 4)


@pytest.mark.parametrize("zone_name", DST_ZONES)
def test_walking_across_each_transition_matches_the_minute_by_minute_oracle(zone_name: str) -> None:
    tz = ZoneInfo(zone_name)
    for transition in TRANSITIONS[zone_name]:
        start, end = transition - timedelta(hours=30), transition + timedelta(hours=30)
        for expr in ORACLE_EXPRESSIONS:
            walked = []
            run = next_run_after(expr, tz, start)
            while run <= end:
                walked.append(run)
                run = next_run_after(expr, tz, run)
            assert walked == list(oracle_runs(expr, tz, start, end)), (expr, zone_name, transition)


def _near_a_transition() -> st.SearchStrategy[tuple[str, datetime]]:
    def pick(zone_name: str) -> st.SearchStrategy[tuple[str, datetime]]:
        near = st.sampled_from(TRANSITIONS[zone_name]).flatmap(
            lambda t: st.integers(-36 * 3600, 36 * 3600).map(lambda s: t + timedelta(seconds=s))
        )
        anywhere = st.integers(0, 2 * 365 * 86400).map(lambda s: utc(2026, 1, 1) + timedelta(seconds=s))
        return st.tuples(st.just(zone_name), st.one_of(near, anywhere))

    return st.sampled_from(DST_ZONES).flatmap(pick)


@settings(max_examples=150, deadline=None)
@given(expr=st.sampled_from(ORACLE_EXPRESSIONS), zone_and_start=_near_a_transition())
def test_iterating_next_runs_walks_every_run_exactly_once(expr: str, zone_and_start: tuple[str, datetime]) -> None:
    zone_name, after = zone_and_start
    tz = ZoneInfo(zone_name)
    _, fixed = _fields(expr)
    walked = []
    for _ in range(8):
        run = next_run_after(expr, tz, after)
        assert run > after
        assert run == oracle_next(expr, tz, after)  # a match or a gap end, none skipped
        walked.append(run)
        after = run
    if fixed:
        walls = [run.astimezone(tz).replace(tzinfo=None, fold=0) for run in walked]
        assert len(set(walls)) == len(walls), "a fixed entry fired twice at one wall time"
        (minutes, hours, *_), _ = _fields(expr)
        slots_per_day = len(minutes or range(60)) * len(hours or range(24))
        assert max(Counter(wall.date() for wall in walls).values()) <= slots_per_day


# --- the remembered walk ------------------------------------------------------------------


def test_an_instant_before_the_remembered_run_takes_no_croniter_step(croniter_steps: Counter[str]) -> None:
    validate_cron("*/5 * * * *")
    croniter_steps.clear()
    assert next_run_after("*/5 * * * *", MADRID, utc(2026, 6, 3, 10, 0, 1)) == utc(2026, 6, 3, 10, 5)
    assert croniter_steps["get_next"] == 1
    for after in (utc(2026, 6, 3, 10, 0, 1), utc(2026, 6, 3, 10, 2, 30), utc(2026, 6, 3, 10, 4, 59)):
        assert next_run_after("*/5 * * * *", MADRID, after) == utc(2026, 6, 3, 10, 5)
    assert croniter_steps["get_next"] == 1


def test_the_remembered_run_itself_and_instants_outside_its_span_are_walked(croniter_steps: Counter[str]) -> None:
    validate_cron("*/5 * * * *")
    next_run_after("*/5 * * * *", MADRID, utc(2026, 6, 3, 10, 2))
    croniter_steps.clear()
    assert next_run_after("*/5 * * * *", MADRID, utc(2026, 6, 3, 10, 5)) == utc(2026, 6, 3, 10, 10)  # strictly after
    assert next_run_after("*/5 * * * *", MADRID, utc(2026, 6, 3, 9, 59)) == utc(2026, 6, 3, 10, 0)  # earlier
    assert croniter_steps["get_next"] == 2


def test_the_remembered_walk_is_kept_per_expression_and_zone() -> None:
    after = utc(2026, 6, 3, 10, 2)
    assert next_run_after("*/5 * * * *", MADRID, after) == utc(2026, 6, 3, 10, 5)
    assert next_run_after("0 * * * *", MADRID, after) == utc(2026, 6, 3, 11, 0)
    assert next_run_after("0 9 * * *", MADRID, after) == utc(2026, 6, 4, 7, 0)
    assert next_run_after("0 9 * * *", NEW_YORK, after) == utc(2026, 6, 3, 13, 0)
    assert next_run_after("*/5 * * * *", MADRID, after) == utc(2026, 6, 3, 10, 5)


def test_a_remembered_walk_tells_the_two_passes_of_a_fall_back_apart() -> None:
    # 01:30 EST (06:30Z, the second pass) remembers 07:00Z; 01:45 EDT (05:45Z) is earlier, though
    # two times of one zone compare by their wall clocks.
    second_pass = datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=NEW_YORK)
    first_pass = datetime(2026, 11, 1, 1, 45, fold=0, tzinfo=NEW_YORK)
    assert next_run_after("0 * * * *", NEW_YORK, second_pass) == utc(2026, 11, 1, 7, 0)
    assert next_run_after("0 * * * *", NEW_YORK, first_pass) == utc(2026, 11, 1, 6, 0)
    assert next_run_after("0 * * * *", NEW_YORK, second_pass) == utc(2026, 11, 1, 7, 0)


def test_an_expression_that_is_not_text_is_refused_as_a_schedule_error() -> None:
    not_text: Any = ["0 9 * * *"]  # what a caller's JSON could hand over
    with pytest.raises(ScheduleError):
        next_run_after(not_text, MADRID, utc(2026, 6, 3))


def test_the_remembered_walks_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schedule_runs, "_LAST_WALKS_MAX", 3)
    for minute in range(10):
        next_run_after(f"{minute} * * * *", MADRID, utc(2026, 6, 3, 10, 30))
        assert len(schedule_runs._LAST_WALKS) <= 3
    assert next_run_after("9 * * * *", MADRID, utc(2026, 6, 3, 10, 30)) == utc(2026, 6, 3, 11, 9)


@settings(max_examples=150, deadline=None)
@given(
    expr=st.sampled_from(ORACLE_EXPRESSIONS),
    zone_and_start=_near_a_transition(),
    fractions=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=6),
)
def test_every_instant_answered_from_a_remembered_walk_matches_the_oracle(
    expr: str, zone_and_start: tuple[str, datetime], fractions: list[float]
) -> None:
    schedule_runs._LAST_WALKS.clear()
    zone_name, after = zone_and_start
    tz = ZoneInfo(zone_name)
    run = next_run_after(expr, tz, after)
    for fraction in fractions:  # instants in [after, run), answered from the memory
        later = after + timedelta(microseconds=int((run - after) // timedelta(microseconds=1) * fraction))
        assert after <= later < run
        assert next_run_after(expr, tz, later) == oracle_next(expr, tz, later) == run


# --- NextRunMemo ------------------------------------------------------------------------


def test_the_memo_computes_each_distinct_key_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Counter[tuple[str, datetime]]()
    real = schedule_runs.next_run_after

    def counting(expr: str, tz: ZoneInfo, after: datetime) -> datetime:
        calls[(expr, after)] += 1
        return real(expr, tz, after)

    monkeypatch.setattr(schedule_runs, "next_run_after", counting)
    memo = NextRunMemo()
    prev = utc(2026, 6, 1, 7, 0)
    for _ in range(1000):
        assert memo.next_run("0 9 * * *", "Europe/Madrid", prev) == utc(2026, 6, 2, 7, 0)
        assert memo.next_run("*/5 * * * *", "Europe/Madrid", prev) == utc(2026, 6, 1, 7, 5)
    assert memo.next_run("0 9 * * *", "America/New_York", prev) == utc(2026, 6, 1, 13, 0)
    assert sum(calls.values()) == 3
    assert len(memo) == 3


def test_the_memo_remembers_an_error_and_raises_it_for_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = NextRunMemo()
    with pytest.raises(ScheduleError):
        memo.next_run("0 9 * * *", "localtime", utc(2026, 6, 1))
    monkeypatch.setattr(schedule_runs, "next_run_after", None)  # would fail if called again
    with pytest.raises(ScheduleError) as caught:
        memo.next_run("0 9 * * *", "localtime", utc(2026, 6, 1))
    assert caught.value.field == "timezone"


# --- task-level helpers -------------------------------------------------------------------


def test_a_cron_tasks_first_run_is_strictly_after_now() -> None:
    now = utc(2026, 6, 1, 7, 0)
    assert first_run(cron="0 9 * * *", timezone="Europe/Madrid", run_at=None, now=now) == utc(2026, 6, 2, 7, 0)


def test_a_one_shots_first_run_is_its_run_at_even_if_past() -> None:
    run_at = datetime(2026, 6, 1, 9, 0, tzinfo=MADRID)
    assert first_run(cron=None, timezone=None, run_at=run_at, now=utc(2026, 7, 1)) == utc(2026, 6, 1, 7, 0)


def test_a_task_with_both_or_neither_schedule_is_refused() -> None:
    with pytest.raises(ScheduleError) as both:
        first_run(cron="0 9 * * *", timezone="UTC", run_at=utc(2026, 6, 1), now=utc(2026, 6, 1))
    with pytest.raises(ScheduleError) as neither:
        first_run(cron=None, timezone="UTC", run_at=None, now=utc(2026, 6, 1))
    assert (both.value.field, neither.value.field) == ("run_at", "cron")


def test_a_cron_task_without_a_zone_is_refused() -> None:
    with pytest.raises(ScheduleError) as caught:
        first_run(cron="0 9 * * *", timezone=None, run_at=None, now=utc(2026, 6, 1))
    assert caught.value.field == "timezone"


def test_a_one_shot_has_no_next_run_after_it_fired() -> None:
    assert next_run_for(cron=None, timezone=None, prev=utc(2026, 6, 1)) is None


def test_a_cron_tasks_next_run_comes_from_the_previous_run_not_the_clock() -> None:
    # After an outage the scheduler replays missed runs one by one.
    assert next_run_for(cron="0 9 * * *", timezone="Europe/Madrid", prev=utc(2020, 1, 1, 8)) == utc(2020, 1, 2, 8)


@pytest.mark.parametrize("value", [datetime(2026, 6, 1, 9), "2026-06-01T09:00:00Z", None])
def test_a_naive_or_non_datetime_run_at_is_refused(value: object) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_run_at(value)  # type: ignore[arg-type]  # the wrong type is the point
    assert caught.value.field == "run_at"
