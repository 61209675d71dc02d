"""Tests for tasks.schedule.cron: which cron expressions and time zones a task may use (pure, no Django)."""

from __future__ import annotations

import pickle
import time
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tasks.schedule import MAX_CRON_LENGTH, ScheduleError, next_run_after, parse_timezone, validate_cron


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# --- parse_timezone -------------------------------------------------------------


@pytest.mark.parametrize("name", ["Europe/Madrid", "America/New_York", "UTC", "Australia/Lord_Howe", "Etc/GMT+5"])
def test_iana_zone_names_are_accepted(name: str) -> None:
    assert parse_timezone(name) == ZoneInfo(name)


@pytest.mark.parametrize(
    "name",
    [
        "localtime",
        "posixrules",
        "Factory",
        "/etc/localtime",
        "/usr/share/zoneinfo/UTC",
        "../../../etc/passwd",
        "Europe/../UTC",
        "Europe//Madrid",
        "./UTC",
        "posix/Europe/Madrid",
        "right/UTC",
        " Europe/Madrid",
        "Europe/Madrid\x00",
        "Mars/Olympus_Mons",
        "+01:00",
        "",
        "A" * 65,
    ],
)
def test_names_that_are_not_allowlisted_zones_are_refused(name: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_timezone(name)
    assert caught.value.field == "timezone"


@pytest.mark.parametrize("value", [None, 1, b"UTC", ["UTC"]])
def test_a_zone_that_is_not_a_string_is_refused(value: object) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_timezone(value)  # type: ignore[arg-type]  # the wrong type is the point
    assert caught.value.field == "timezone"


def test_a_wrongly_cased_zone_is_refused_with_the_right_spelling() -> None:
    with pytest.raises(ScheduleError, match="did you mean 'Europe/Madrid'"):
        parse_timezone("europe/madrid")


# --- validate_cron --------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "normalised"),
    [
        ("0 9 * * *", "0 9 * * *"),
        ("  */5\t9-17  * *   mon-fri ", "*/5 9-17 * * MON-FRI"),
        ("0 0 1 jan,jul *", "0 0 1 JAN,JUL *"),
        ("1,2-4,*/5,7/3 * * * 7", "1,2-4,*/5,7/3 * * * 7"),
        ("0 0 l * *", "0 0 L * *"),
        ("0 0 * * 5#3", "0 0 * * 5#3"),
        ("0 0 * * l5", "0 0 * * L5"),
        ("0 0 29 2 *", "0 0 29 2 *"),
        ("0 0 31 1-12 *", "0 0 31 1-12 *"),
        ("@DAILY", "@daily"),
        ("@yearly", "@yearly"),
        ("@annually", "@annually"),
        ("@monthly", "@monthly"),
        ("@weekly", "@weekly"),
        ("@midnight", "@midnight"),
        ("@hourly", "@hourly"),
    ],
)
def test_valid_expressions_are_returned_normalised(expr: str, normalised: str) -> None:
    assert validate_cron(expr) == normalised


def test_an_equal_range_means_that_one_value_not_the_whole_field() -> None:
    # croniter alone reads '5-5' as every minute.
    assert validate_cron("5-5 * * * *") == "5 * * * *"
    assert next_run_after("5-5 * * * *", ZoneInfo("UTC"), utc(2026, 5, 1, 12, 0)) == utc(2026, 5, 1, 12, 5)


def test_day_of_week_seven_means_sunday() -> None:
    # 2026-05-01 is a Friday.
    assert next_run_after("0 0 * * 7", ZoneInfo("UTC"), utc(2026, 5, 1)) == utc(2026, 5, 3)
    assert next_run_after("0 0 * * 7-7", ZoneInfo("UTC"), utc(2026, 5, 1)) == utc(2026, 5, 3)


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("", "empty"),
        ("  \t ", "empty"),
        ("* * * *", "has 4 fields"),
        ("0 0 9 * * *", "seconds and year"),
        ("0 0 9 * * * 2026", "seconds and year"),
        ("@reboot", "@reboot is not a schedule"),
        ("@every_minute", "unknown macro"),
        ("60 * * * *", "out of range"),
        ("* 24 * * *", "out of range"),
        ("* * 0 * *", "out of range"),
        ("* * 32 * *", "out of range"),
        ("* * * 0 *", "out of range"),
        ("* * * 13 *", "out of range"),
        ("* * * * 8", "out of range"),
        ("-1 * * * *", "not valid"),
        ("H * * * *", "not valid"),
        ("H/15 * * * *", "not valid"),
        ("H(0-29) * * * *", "not valid"),
        ("R * * * *", "not valid"),
        ("* * ? * *", "not valid"),
        ("* * * * ?", "not valid"),
        ("* * 15W * *", "not valid"),
        ("* * LW * *", "not valid"),
        ("* * * * 5L", "write 'L5'"),
        ("* * * * 1#6", "1 to 5"),
        ("* * * * 1#0", "1 to 5"),
        ("* * * FOO *", "'FOO' is not a month value"),
        ("* * * * MON-FOO", "'FOO' is not a day-of-week value"),
        ("* * * MON *", "'MON' is not a month value"),
        ("*/0 * * * *", "step outside"),
        ("*/61 * * * *", "step outside"),
        ("0 */25 * * *", "step outside"),
        ("10-5 * * * *", "runs backwards"),
        ("0 0 * * SAT-SUN", "runs backwards"),
        ("\uff11 * * * *", "not valid"),  # full-width digit one
        ("0 9 * * *\n0 10 * * *", "has 9 fields"),
        ("0 9 * * 1#2,3", "not supported"),
        ("0 0 1 * L5", "cannot be combined"),
        ("0 0 15 * 5#3", "cannot be combined"),
        ("100 * * * *", "not valid"),
        ("1,,2 * * * *", "not valid"),
    ],
)
def test_invalid_expressions_are_refused_with_a_reason(expr: str, why: str) -> None:
    with pytest.raises(ScheduleError, match=why) as caught:
        validate_cron(expr)
    assert caught.value.field == "cron"


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("0 0 30 2 *", "day 30 does not occur in February"),
        ("0 0 31 4 *", "day 31 does not occur in April"),
        ("0 0 31 2,4,6,9,11 *", "day 31 does not occur in February, April, June, September, November"),
        ("0 0 30-31 feb *", "day 30 does not occur in February"),
        ("0 0 31 4 MON", "day 31 does not occur in April"),  # a weekday does not rescue a typo
    ],
)
def test_expressions_that_never_fire_are_refused_quickly(expr: str, why: str) -> None:
    began = time.perf_counter()
    with pytest.raises(ScheduleError, match=why) as caught:
        validate_cron(expr)
    assert caught.value.field == "cron"
    assert time.perf_counter() - began < 0.05


@pytest.mark.parametrize("expr", ["0 0 29 2 *", "0 0 * 2 1#5", "0 0 L 2 *", "0 0 * 2 L1"])
def test_rare_expressions_that_do_fire_are_accepted(expr: str) -> None:
    assert validate_cron(expr) == expr


def test_a_schedule_error_names_its_field_and_survives_pickling() -> None:
    error = pickle.loads(pickle.dumps(ScheduleError("cron", "cron expression is empty")))
    assert (error.field, str(error)) == ("cron", "cron expression is empty")


def test_an_overlong_expression_is_refused() -> None:
    with pytest.raises(ScheduleError, match="longer than") as caught:
        validate_cron("0 9 * * " + ",".join(["1"] * MAX_CRON_LENGTH))
    assert caught.value.field == "cron"


@pytest.mark.parametrize("value", [None, 5, b"0 9 * * *", ["0", "9", "*", "*", "*"]])
def test_an_expression_that_is_not_a_string_is_refused(value: object) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_cron(value)  # type: ignore[arg-type]  # the wrong type is the point
    assert caught.value.field == "cron"
