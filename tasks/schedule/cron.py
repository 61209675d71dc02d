"""Schedule syntax: what a task's schedule may say (cron expressions and the zones they are read in).

A plain module (no Django) so the task API and the scheduler refuse the same
inputs. Five-field Vixie cron plus a few croniter extensions, checked here so
croniter's quirks stay out of stored data (``validate_cron`` lists them); time
zones from an allowlist of real tz database names. The next-run maths that
reads a validated expression is ``tasks.schedule.runs``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import CroniterError, croniter

__all__ = [
    "MAX_CRON_LENGTH",
    "MAX_TIMEZONE_LENGTH",
    "CronSchedule",
    "ScheduleError",
    "cron_schedule",
    "parse_timezone",
    "validate_cron",
]

MAX_CRON_LENGTH = 120
MAX_TIMEZONE_LENGTH = 64

# Fixed reference for the "does it ever fire" probe, so validation is
# deterministic (the same expression is never valid one day and not the next).
_PROBE_FROM = datetime(2026, 1, 1)  # naive: croniter walks wall times


class ScheduleError(ValueError):
    """A schedule input the API should answer with a 400 naming ``field``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(field, message)  # both in args, so it pickles
        self.field = field
        self.message = message

    def __str__(self) -> str:
        return self.message


# --- time zones ---------------------------------------------------------------

_ZONE_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*", re.ASCII)
# Files zoneinfo can load that are not zones a tenant should pick: the host's
# own zone, the POSIX fallback rules, a placeholder, and the alternative trees.
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory", "posix", "right"})
_NOT_ZONE_PREFIXES = ("posix/", "right/", "SystemV/")


@lru_cache(maxsize=1)
def _allowed_zones() -> dict[str, str]:
    """Map lower-cased name -> name for every zone a task may use."""
    return {
        name.lower(): name
        for name in available_timezones()
        if _ZONE_NAME_RE.fullmatch(name) and name not in _NOT_ZONES and not name.startswith(_NOT_ZONE_PREFIXES)
    }


def parse_timezone(name: str) -> ZoneInfo:
    """Return the IANA zone ``name``; refuse anything off the allowlist.

    ``ZoneInfo`` also loads ``localtime`` and friends, which would make a
    task's schedule depend on the host, so only real tz database names pass.
    """
    if not isinstance(name, str):
        raise ScheduleError("timezone", "time zone must be a string such as 'Europe/Madrid'")
    if not name:
        raise ScheduleError("timezone", "time zone is empty; use an IANA name such as 'Europe/Madrid'")
    if len(name) > MAX_TIMEZONE_LENGTH:
        raise ScheduleError("timezone", f"time zone is longer than {MAX_TIMEZONE_LENGTH} characters")
    return _zone(name)


@lru_cache(maxsize=1024)
def _zone(name: str) -> ZoneInfo:
    allowed = _allowed_zones()
    if allowed.get(name.lower()) != name:
        hint = allowed.get(name.lower())
        suffix = f"; did you mean {hint!r}?" if hint else "; use an IANA name such as 'Europe/Madrid'"
        raise ScheduleError("timezone", f"unknown time zone {name!r}{suffix}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # listed but unreadable
        raise ScheduleError("timezone", f"unknown time zone {name!r}") from exc


# --- cron expressions ---------------------------------------------------------

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_MONTH_LABELS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                 "October", "November", "December")  # fmt: skip
_WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # Feb 29 exists in leap years


@dataclass(frozen=True)
class _Field:
    label: str
    low: int
    high: int
    span: int  # distinct values; a step larger than this is surely a typo
    names: tuple[str, ...] = ()  # names[i] means low + i

    def value(self, text: str, item: str) -> int:
        """Return the number ``text`` (digits or a name) stands for, or raise."""
        if text.isdigit():
            value = int(text)
        elif text in self.names:
            value = self.low + self.names.index(text)
        else:
            raise self.refuse(item, f"is not valid; {text!r} is not a {self.label} value")
        if not self.low <= value <= self.high:
            raise self.refuse(item, f"is out of range; {self.label} values are {self.low}-{self.high}")
        return value

    def check_step(self, step: str | None, item: str) -> None:
        if step is not None and not 1 <= int(step) <= self.span:
            raise self.refuse(item, f"has a step outside 1-{self.span}")

    def refuse(self, item: str, why: str) -> ScheduleError:
        return ScheduleError("cron", f"{self.label} field: {item!r} {why}")


_MINUTES = _Field("minute", 0, 59, 60)
_HOURS = _Field("hour", 0, 23, 24)
_DAYS = _Field("day-of-month", 1, 31, 31)
_MONTH = _Field("month", 1, 12, 12, _MONTHS)
_DAY_OF_WEEK = _Field("day-of-week", 0, 7, 7, _WEEKDAYS)
_FIELDS = (_MINUTES, _HOURS, _DAYS, _MONTH, _DAY_OF_WEEK)

_VALUE = r"[0-9]{1,2}|[A-Z]{3}"
_RANGE_RE = re.compile(rf"(?P<low>{_VALUE})(?:-(?P<high>{_VALUE}))?(?:/(?P<step>[0-9]{{1,2}}))?", re.ASCII)
_STAR_RE = re.compile(r"\*(?:/(?P<step>[0-9]{1,2}))?", re.ASCII)
_NTH_RE = re.compile(rf"(?P<day>{_VALUE})#(?P<nth>[0-9])", re.ASCII)
_LAST_WEEKDAY_RE = re.compile(r"L(?P<day>[0-9])", re.ASCII)
_QUARTZ_LAST_WEEKDAY_RE = re.compile(rf"(?P<day>{_VALUE})L", re.ASCII)
_FIELD_SPLIT_RE = re.compile(r"[ \t]+")
_SYNTAX_HELP = "use numbers, names, '*', ranges 'a-b', steps '/n' and lists 'a,b'"


@dataclass(frozen=True)
class CronSchedule:
    """A validated expression with its croniter, parsed once and shared (see ``cron_schedule``)."""

    expr: str  # normalised, what validate_cron returns
    fixed_time: bool  # no '*' or '/' in minute and hour: runs once on fall-back day
    cron: croniter
    lock: threading.Lock  # croniter keeps its position in the object


def validate_cron(expr: str) -> str:
    """Return ``expr`` normalised, or raise ScheduleError(field="cron").

    Accepted: five fields (minute hour day-of-month month day-of-week) in
    Vixie syntax (numbers, ``*``, ranges, steps, lists, JAN-DEC and SUN-SAT
    names, 7 for Sunday), ``a/n`` as short for ``a-max/n``, croniter's ``L``
    (last day) in day-of-month, ``n#k`` (k-th weekday n) and ``Ln`` (last
    weekday n) in day-of-week, and the macros @yearly @annually @monthly
    @weekly @daily @midnight @hourly. When both day fields are restricted a
    day matching either fires (cron's OR rule).

    Refused, so croniter's extensions and quirks stay out of stored data:
    seconds or year fields, ``H``/``R`` hashes, ``?``, ``W``, ranges that run
    backwards (croniter wraps them), steps of 0 or larger than the field,
    ``#``/``L`` weekdays next to a restricted day-of-month (croniter would
    intersect them), and a day of month that none of the months has
    (``0 0 30 2 *``), even if a weekday could still fire: that is a typo
    worth a 400. Equal ranges such as ``5-5`` become ``5`` (croniter reads them
    as the whole field). Names are upper-cased, macros lower-cased.
    """
    return cron_schedule(expr).expr


def cron_schedule(expr: object) -> CronSchedule:
    """Return the parsed, validated ``expr``, or raise ScheduleError(field="cron").

    Cached per expression, so the next-run maths never parses one twice; the
    croniter in it keeps a position, so use it under its ``lock``.
    """
    return _schedule(_check_str(expr))


def _check_str(expr: object) -> str:
    if not isinstance(expr, str):
        raise ScheduleError("cron", "cron expression must be a string such as '0 9 * * *'")
    if len(expr) > MAX_CRON_LENGTH:
        raise ScheduleError("cron", f"cron expression is longer than {MAX_CRON_LENGTH} characters")
    return expr


@lru_cache(maxsize=8192)
def _schedule(expr: str) -> CronSchedule:
    normalised, five_fields = _normalise(expr)
    try:
        cron = croniter(five_fields, _PROBE_FROM, ret_type=datetime)
    except CroniterError as exc:
        raise ScheduleError("cron", f"cron expression {expr!r} is not supported: {exc}") from exc
    try:
        cron.get_next(datetime)  # raises in ~1 ms when it never fires
    except CroniterError as exc:
        raise ScheduleError("cron", f"cron expression {expr!r} never fires") from exc
    minute, hour = five_fields.split(" ")[:2]
    fixed_time = not any(char in minute + hour for char in "*/")
    return CronSchedule(normalised, fixed_time, cron, threading.Lock())


def _normalise(expr: str) -> tuple[str, str]:
    """Return (normalised form, its five-field equivalent) or raise."""
    text = expr.strip(" \t\r\n")
    if not text:
        raise ScheduleError("cron", "cron expression is empty")
    if text.startswith("@"):
        macro = text.lower()
        if macro == "@reboot":
            raise ScheduleError("cron", "@reboot is not a schedule; use a cron expression or run_at")
        if macro not in _MACROS:
            raise ScheduleError("cron", f"unknown macro {text!r}; use one of {', '.join(_MACROS)}")
        return macro, _MACROS[macro]
    fields = _FIELD_SPLIT_RE.split(text.upper())
    if len(fields) != 5:
        extra = " (seconds and year fields are not supported)" if len(fields) in (6, 7) else ""
        raise ScheduleError(
            "cron",
            f"cron expression has {len(fields)} fields; use 5: minute hour day-of-month month day-of-week{extra}",
        )
    minute, hour, days, months, weekdays = (
        ",".join(_normalise_item(item, field) for item in value.split(","))
        for field, value in zip(_FIELDS, fields, strict=True)
    )
    if days != "*" and ("#" in weekdays or "L" in weekdays):
        raise ScheduleError(
            "cron", "a '#' or 'L' day-of-week cannot be combined with a day-of-month; set day-of-month to '*'"
        )
    _check_day_can_occur(_expand(days, _DAYS), _expand(months, _MONTH))
    five_fields = f"{minute} {hour} {days} {months} {weekdays}"
    return five_fields, five_fields


def _normalise_item(item: str, field: _Field) -> str:
    """Validate one list item of ``field``; return it in normal form."""
    if match := _STAR_RE.fullmatch(item):
        field.check_step(match["step"], item)
        return item
    if field is _DAYS and item == "L":
        return item
    if field is _DAY_OF_WEEK:
        if match := _NTH_RE.fullmatch(item):
            field.value(match["day"], item)
            if not 1 <= int(match["nth"]) <= 5:
                raise field.refuse(item, "is not valid; the week number after '#' is 1 to 5")
            return item
        if match := _LAST_WEEKDAY_RE.fullmatch(item):
            field.value(match["day"], item)
            return item
        if match := _QUARTZ_LAST_WEEKDAY_RE.fullmatch(item):
            raise field.refuse(item, f"is not valid; write 'L{match['day']}' for the last such weekday of a month")
    match = _RANGE_RE.fullmatch(item)
    if match is None:
        raise field.refuse(item, f"is not valid; {_SYNTAX_HELP}")
    low = field.value(match["low"], item)
    if match["high"] is not None:
        high = field.value(match["high"], item)
        if low > high:
            raise field.refuse(item, "runs backwards; split it into two ranges joined by ','")
        if low == high:
            return match["low"]  # croniter would read 'a-a' as the whole field
    field.check_step(match["step"], item)
    return item


def _expand(text: str, field: _Field) -> set[int] | None:
    """Return the values of a normalised field; None if it holds '*' or 'L'."""
    values: set[int] = set()
    for item in text.split(","):
        match = _RANGE_RE.fullmatch(item)
        if match is None:  # '*', '*/n' or 'L'
            return None
        low = field.value(match["low"], item)
        if match["high"] is not None:
            high = field.value(match["high"], item)
        elif match["step"]:  # 'a/n' means 'a-max/n'
            high = field.high
        else:
            high = low
        values.update(range(low, high + 1, int(match["step"] or 1)))
    return values


def _check_day_can_occur(days: set[int] | None, months: set[int] | None) -> None:
    """Refuse a day-of-month list that no month of the expression has."""
    if days is None:  # '*' or 'L': some day always exists
        return
    months = months or set(range(1, 13))
    if min(days) > max(_MONTH_DAYS[month - 1] for month in months):
        names = ", ".join(_MONTH_LABELS[month - 1] for month in sorted(months))
        raise ScheduleError("cron", f"cron expression never fires: day {min(days)} does not occur in {names}")
