"""Schedule maths: validate cron expressions and zones, compute next runs.

A plain module (no Django) so the task API, the scheduler and the tests share
one set of rules.

Cron fields are read in the task's local wall time; runs are UTC instants.
croniter walks naive wall times (it does no zone arithmetic on naive values)
and each matching wall time is mapped to UTC instants:

* one instant: the usual case;
* none, the wall time falls in a spring-forward gap: the first instant after
  the gap (the transition itself). Results are instants, so several gap slots,
  and a real slot at that same instant, collapse into one run;
* two, the wall time repeats in a fall-back overlap: both for an entry with a
  wildcard or step (``*`` or ``/``) in its minute or hour field, so it keeps
  firing evenly in UTC; only the first for a fixed entry (lists and ranges
  count as fixed, as in Vixie cron), so ``30 1 * * *`` runs once.

The next run is the smallest mapped instant strictly after ``after``. The
earliest instant of a wall time never decreases as the wall time grows, so the
walk stops at the first wall time whose earliest instant is past ``after``:
away from a transition that is one croniter step. The walk starts earlier only
when a fall-back is near (within the next day, from the start of the repeated
wall interval), so slots of the second pass are not missed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import CroniterError, croniter

__all__ = [
    "MAX_CRON_LENGTH",
    "MAX_TIMEZONE_LENGTH",
    "NextRunMemo",
    "ScheduleError",
    "first_run",
    "next_run_after",
    "next_run_for",
    "parse_timezone",
    "validate_cron",
    "validate_run_at",
]

MAX_CRON_LENGTH = 120
MAX_TIMEZONE_LENGTH = 64

_MINUTE = timedelta(minutes=1)
# A fall-back further ahead than this cannot pull the walk's start back.
_FALL_BACK_LOOKAHEAD = timedelta(hours=26)
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
class _Schedule:
    """A validated expression with its croniter, parsed once and shared."""

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
    return _schedule(_check_str(expr)).expr


def _check_str(expr: object) -> str:
    if not isinstance(expr, str):
        raise ScheduleError("cron", "cron expression must be a string such as '0 9 * * *'")
    if len(expr) > MAX_CRON_LENGTH:
        raise ScheduleError("cron", f"cron expression is longer than {MAX_CRON_LENGTH} characters")
    return expr


@lru_cache(maxsize=8192)
def _schedule(expr: str) -> _Schedule:
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
    return _Schedule(normalised, fixed_time, cron, threading.Lock())


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


# --- next runs ----------------------------------------------------------------


def next_run_after(expr: str, tz: ZoneInfo, after: datetime) -> datetime:
    """Return the first run of ``expr`` in ``tz`` strictly after ``after``.

    ``after`` is aware (normally the previous next_run_at, in UTC); the result
    is an aware UTC datetime on a whole minute. See the module docstring for
    how wall times in DST gaps and overlaps map to instants.
    """
    if after.tzinfo is None or after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    schedule = _schedule(_check_str(expr))
    after = after.astimezone(UTC)
    local = after.astimezone(tz)
    # In the second pass of an overlap, first-pass instants are all behind us,
    # so the first candidate found is the answer.
    second_pass = local.fold == 1 and local.replace(fold=0).utcoffset() != local.utcoffset()
    start = _walk_start(tz, after, local)
    best: datetime | None = None
    with schedule.lock:
        try:
            wall = schedule.cron.get_next(datetime, start_time=start)
            while True:
                instants = _instants(tz, wall, schedule.fixed_time)
                for instant in instants:
                    if instant > after and (best is None or instant < best):
                        best = instant
                if instants[0] > after or (second_pass and best is not None):
                    break
                wall = schedule.cron.get_next(datetime)
        except CroniterError as exc:
            raise ScheduleError("cron", f"cron expression {expr!r} has no run after {after:%Y-%m-%d}") from exc
    assert best is not None
    return best


def _walk_start(tz: ZoneInfo, after: datetime, local: datetime) -> datetime:
    """Return the naive wall time to start croniter from (exclusive).

    Normally the wall time of ``after``. When a fall-back lies ahead, wall
    times repeat, and a slot of the second pass can have a wall time earlier
    than ``after``'s: start just before the repeated interval instead.
    """
    wall = local.replace(tzinfo=None, fold=0)
    offset = local.utcoffset()
    assert offset is not None
    if _offset_at(tz, after + _FALL_BACK_LOOKAHEAD) >= offset:
        return wall
    # Binary search for the fall-back instant, on whole minutes.
    low, high = 0, int(_FALL_BACK_LOOKAHEAD / _MINUTE)
    base = after.replace(second=0, microsecond=0)
    while high - low > 1:
        middle = (low + high) // 2
        if _offset_at(tz, base + middle * _MINUTE) < offset:
            high = middle
        else:
            low = middle
    transition = base + high * _MINUTE
    repeated_from = transition.astimezone(tz).replace(tzinfo=None, fold=0)
    return min(wall, repeated_from - _MINUTE)


def _offset_at(tz: ZoneInfo, instant: datetime) -> timedelta:
    offset = tz.utcoffset(instant.astimezone(tz))
    assert offset is not None
    return offset


def _instants(tz: ZoneInfo, wall: datetime, fixed_time: bool) -> tuple[datetime, ...]:
    """Map a naive wall time to its run instants (UTC), earliest first."""
    first_offset = wall.replace(tzinfo=tz).utcoffset()
    second_offset = wall.replace(tzinfo=tz, fold=1).utcoffset()
    assert first_offset is not None and second_offset is not None
    first = (wall - first_offset).replace(tzinfo=UTC)
    if first_offset == second_offset:
        return (first,)
    second = (wall - second_offset).replace(tzinfo=UTC)
    if first_offset > second_offset:  # overlap: fold=0 is the first pass
        return (first,) if fixed_time else (first, second)
    # Gap: fold=1 reads the wall time with the new offset, landing before the
    # transition; fold=0 with the old one, landing after it.
    return (_gap_end(tz, second, first),)


@lru_cache(maxsize=256)
def _gap_end(tz: ZoneInfo, before: datetime, after: datetime) -> datetime:
    """Return the first whole minute in (before, after] on the new offset."""
    new_offset = _offset_at(tz, after)
    low, high = 0, int((after - before) / _MINUTE)
    while high - low > 1:
        middle = (low + high) // 2
        if _offset_at(tz, before + middle * _MINUTE) == new_offset:
            high = middle
        else:
            low = middle
    return before + high * _MINUTE


class NextRunMemo:
    """Compute each distinct (expression, zone, previous run) once per tick.

    Tasks due together mostly share all three, and one next run costs
    croniter 80-200 µs; create one memo per tick and drop it after. Errors are
    remembered too, so a broken expression shared by many rows costs once.
    """

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str, datetime], datetime | ScheduleError] = {}

    def next_run(self, expr: str, zone_name: str, prev: datetime) -> datetime:
        """Return next_run_after(expr, parse_timezone(zone_name), prev), memoised."""
        key = (expr, zone_name, prev)
        result = self._runs.get(key)
        if result is None:
            try:
                result = next_run_after(expr, parse_timezone(zone_name), prev)
            except ScheduleError as exc:
                result = exc
            self._runs[key] = result
        if isinstance(result, ScheduleError):
            raise result
        return result

    def __len__(self) -> int:
        return len(self._runs)


# --- task-level helpers ---------------------------------------------------------


def validate_run_at(run_at: datetime) -> datetime:
    """Return a one-shot's ``run_at`` in UTC; a naive time is ambiguous, so refuse it.

    A past ``run_at`` is accepted and runs at once, as Cloud Tasks does.
    """
    if not isinstance(run_at, datetime):
        raise ScheduleError("run_at", "run_at must be a date-time")
    if run_at.tzinfo is None or run_at.utcoffset() is None:
        raise ScheduleError("run_at", "run_at needs a UTC offset, e.g. 2026-05-01T09:00:00Z")
    return run_at.astimezone(UTC)


def first_run(*, cron: str | None, timezone: str | None, run_at: datetime | None, now: datetime) -> datetime:
    """Return next_run_at for a task being created or resumed.

    A cron task's first run is strictly after ``now``: runs missed while paused
    are not replayed. A one-shot runs at ``run_at`` (at once if already past).
    """
    if cron is not None and run_at is not None:
        raise ScheduleError("run_at", "a task has either a cron expression or a run_at, not both")
    if cron is not None:
        return next_run_after(cron, _cron_zone(timezone), now)
    if run_at is None:
        raise ScheduleError("cron", "a task needs a cron expression or a run_at")
    return validate_run_at(run_at)


def next_run_for(*, cron: str | None, timezone: str | None, prev: datetime) -> datetime | None:
    """Return next_run_at once the job for ``prev`` exists; None for a one-shot.

    The next run comes from the previous next_run_at, never from the clock, so
    after an outage each tick creates the next missed run.
    """
    if cron is None:
        return None
    return next_run_after(cron, _cron_zone(timezone), prev)


def _cron_zone(timezone: str | None) -> ZoneInfo:
    if timezone is None:
        raise ScheduleError("timezone", "a cron task needs a time zone, e.g. 'UTC' or 'Europe/Madrid'")
    return parse_timezone(timezone)
