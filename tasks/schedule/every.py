"""Interval schedules (`every`): runs at anchor + k * every (k >= 0), fixed UTC instants, whatever the zone's DST.

Pure (no Django). The text form is one or more "<number><unit>" parts, units d, h, m
(e.g. "90m", "2h", "1h30m"), read into whole seconds; it is shown back in its shortest
form ("90m" reads back as "1h30m"). The next run is the previous one plus the interval,
as cron's is the next match after the previous one: after an outage each tick creates
the next missed run, and the missed-runs policy (tasks.schedule.missed) applies alike.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from tasks.schedule.cron import ScheduleError

__all__ = ["EVERY_SECONDS", "MAX_EVERY_LENGTH", "UNITS", "first_every_run", "format_every", "parse_every"]

# At least a minute (the scheduler's resolution), at most 366 days.
EVERY_SECONDS = (60, 366 * 86400)
MAX_EVERY_LENGTH = 32
UNITS = {"d": 86400, "h": 3600, "m": 60}  # largest first: format_every (and tasks/task_json_sql.py) write them so
_EVERY_RE = re.compile(r"(?:[0-9]{1,6}[dhm])+", re.ASCII)
_PART_RE = re.compile(r"([0-9]{1,6})([dhm])", re.ASCII)


def parse_every(text: str) -> int:
    """Return the interval in seconds; ScheduleError("every") when malformed or out of bounds."""
    if not isinstance(text, str) or len(text) > MAX_EVERY_LENGTH or not _EVERY_RE.fullmatch(text):
        raise ScheduleError("every", 'an interval like "90m", "2h" or "1h30m" (units d, h, m)')
    seconds = sum(int(number) * UNITS[unit] for number, unit in _PART_RE.findall(text))
    low, high = EVERY_SECONDS
    if not low <= seconds <= high:
        raise ScheduleError("every", f"must be at least 1m and at most {high // 86400}d")
    return seconds


def format_every(seconds: int) -> str:
    """The shortest text for an interval of whole minutes, e.g. 5400 -> "1h30m"."""
    parts = []
    for unit, size in UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0m"


def first_every_run(*, every_seconds: int, anchor: datetime, after: datetime) -> datetime:
    """The first instant anchor + k * every (k >= 0) strictly after `after` (aware, UTC).

    An anchor in the future is the first run: nothing runs before it.
    """
    if anchor.tzinfo is None or after.tzinfo is None:
        raise ValueError("anchor and after must be aware datetimes")
    step = timedelta(seconds=every_seconds)
    anchor, after = anchor.astimezone(UTC), after.astimezone(UTC)
    k = max(0, (after - anchor) // step + 1)  # floor division of timedeltas: exact
    return anchor + k * step
