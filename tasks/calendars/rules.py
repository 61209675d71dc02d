"""Calendars: a tenant's named sets of local dates, and the instants they cover (pure, no ORM).

A calendar is a time zone and a set of dates, given as `dates` (YYYY-MM-DD) and
`ranges` ({"from", "to"}, both inclusive). A run is excluded by it when its local
date in the calendar's zone is one of those dates. That test is made on UTC
instants: each run of consecutive dates becomes one span [start of the first
day, start of the day after the last) in UTC, computed when the calendar is
saved, so the scheduler's SQL compares instants and never converts zones.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MAX_NAME_LENGTH = 63
MAX_CALENDARS_PER_TENANT = 100
MAX_ENTRIES = 1000  # dates and ranges together, per calendar
MAX_RANGE_DAYS = 366  # one range, both ends included
MAX_EXCLUDE_CALENDARS = 8  # per task
FIRST_DATE = date(1970, 1, 1)
LAST_DATE = date(2199, 12, 31)
_NAME = re.compile(r"[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?", re.ASCII)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
NAME_RULE = f"1-{MAX_NAME_LENGTH} of a-z 0-9 _ -, starting and ending with a letter or digit"
DATE_RULE = f"a date YYYY-MM-DD from {FIRST_DATE} to {LAST_DATE}"


class CalendarRuleError(ValueError):
    """An input refused; `field` names it as the API reports it (`dates[3]`, `ranges[1].to`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def is_valid_name(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NAME_LENGTH and _NAME.fullmatch(value) is not None


def parse_date(value: object, field: str) -> date:
    """A YYYY-MM-DD string within [FIRST_DATE, LAST_DATE], or CalendarRuleError naming `field`."""
    if not isinstance(value, str) or not _DATE.fullmatch(value):
        raise CalendarRuleError(field, DATE_RULE)
    try:
        parsed = date.fromisoformat(value)
    except ValueError:  # well-formed but impossible, e.g. 2027-02-30
        raise CalendarRuleError(field, DATE_RULE) from None
    if not FIRST_DATE <= parsed <= LAST_DATE:
        raise CalendarRuleError(field, DATE_RULE)
    return parsed


@dataclass(frozen=True)
class DateRange:
    start: date  # "from", included
    end: date  # "to", included


def check_ranges(ranges: Sequence[DateRange]) -> None:
    """Each range runs forward and spans at most MAX_RANGE_DAYS days."""
    for index, item in enumerate(ranges):
        if item.end < item.start:
            raise CalendarRuleError(f"ranges[{index}].to", "must not be before from")
        if (item.end - item.start).days + 1 > MAX_RANGE_DAYS:
            raise CalendarRuleError(f"ranges[{index}].to", f"a range spans at most {MAX_RANGE_DAYS} days")


def check_entry_count(dates: Sequence[date], ranges: Sequence[DateRange]) -> None:
    if len(dates) + len(ranges) > MAX_ENTRIES:
        field = "ranges" if ranges and len(dates) <= MAX_ENTRIES else "dates"
        raise CalendarRuleError(field, f"a calendar holds at most {MAX_ENTRIES} dates and ranges together")


def day_runs(dates: Iterable[date], ranges: Iterable[DateRange]) -> list[tuple[date, date]]:
    """The covered dates as sorted, disjoint runs of consecutive days: (first day, day after the last)."""
    intervals = sorted(
        [(day, day + timedelta(days=1)) for day in dates] + [(r.start, r.end + timedelta(days=1)) for r in ranges]
    )
    merged: list[tuple[date, date]] = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _day_start(day: date, zone: ZoneInfo) -> datetime:
    """The first instant of `day` in `zone`, in UTC.

    Local midnight in a spring-forward gap (fold=0 reads it with the offset before the
    change) is the instant of the change itself: still the first instant of that date.
    """
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def spans(zone: ZoneInfo, dates: Iterable[date], ranges: Iterable[DateRange]) -> list[tuple[datetime, datetime]]:
    """The UTC spans [start, end) the calendar covers, sorted and disjoint."""
    return [(_day_start(start, zone), _day_start(end, zone)) for start, end in day_runs(dates, ranges)]


def covering(spans_by_calendar: Sequence[tuple[str, Sequence[tuple[datetime, datetime]]]], at: datetime) -> str | None:
    """The first calendar (in the task's order) whose spans hold the instant `at` (aware), or None.

    The same test as the scheduler's SQL (jobs/sql/calendars.sql): the span starting last
    at or before `at` holds it when it ends after it (spans are disjoint and sorted).
    """
    for name, calendar_spans in spans_by_calendar:
        index = bisect.bisect_right(calendar_spans, at, key=_start) - 1
        if index >= 0 and calendar_spans[index][1] > at:
            return name
    return None


def _start(span: tuple[datetime, datetime]) -> datetime:
    return span[0]


def skip_reason(name: str) -> str:
    """The `error` of a run a calendar excluded (the job is `skipped`)."""
    return f"calendar:{name}"
