"""Next runs: when a validated schedule fires, in UTC instants, across DST changes.

A plain module (no Django) so the task API and the scheduler compute runs the
same way; the syntax it reads is checked in ``tasks.schedule.cron``.

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

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from croniter import CroniterError

from tasks.schedule.bounds import first_run_from
from tasks.schedule.cron import ScheduleError, cron_schedule, parse_timezone
from tasks.schedule.every import first_every_run

__all__ = ["NextRunMemo", "first_run", "next_run_after", "next_run_for", "validate_run_at"]

_MINUTE = timedelta(minutes=1)
# A fall-back further ahead than this cannot pull the walk's start back.
_FALL_BACK_LOOKAHEAD = timedelta(hours=26)


# --- next runs ----------------------------------------------------------------


# (expression, zone) -> (after, its next run) of the last walk: every instant in [after, run) has
# that same next run, since no run lies between them. Creates of the same schedule within one
# period (most tenants' expressions are a few common ones) skip croniter's walk. Bounded: emptied
# when full. A tuple is replaced whole, so threads of one process read one pair or the other.
_LAST_WALKS: dict[tuple[str, ZoneInfo], tuple[datetime, datetime]] = {}
_LAST_WALKS_MAX = 4096


def next_run_after(expr: str, tz: ZoneInfo, after: datetime) -> datetime:
    """Return the first run of ``expr`` in ``tz`` strictly after ``after``.

    ``after`` is aware (normally the previous next_run_at, in UTC); the result
    is an aware UTC datetime on a whole minute. See the module docstring for
    how wall times in DST gaps and overlaps map to instants.
    """
    if after.tzinfo is None or after.utcoffset() is None:
        raise ValueError("after must be an aware datetime")
    if type(expr) is not str:
        return _walk_to_next_run(expr, tz, after)  # refused there, as a ScheduleError
    # In UTC: two times of one zone compare by their wall clocks, blind to a fall-back's fold.
    after = after.astimezone(UTC)
    key = (expr, tz)
    last = _LAST_WALKS.get(key)
    if last is not None and last[0] <= after < last[1]:
        return last[1]
    run = _walk_to_next_run(expr, tz, after)
    if len(_LAST_WALKS) >= _LAST_WALKS_MAX:
        _LAST_WALKS.clear()
    _LAST_WALKS[key] = (after, run)
    return run


def _walk_to_next_run(expr: str, tz: ZoneInfo, after: datetime) -> datetime:
    """next_run_after's answer, walked with croniter."""
    schedule = cron_schedule(expr)
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

    Tasks due together mostly share all three, and one next run is
    croniter's costliest call of a tick; create one memo per tick and drop it after. Errors are
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


def first_run(
    *,
    cron: str | None,
    timezone: str | None,
    run_at: datetime | None,
    now: datetime,
    every_seconds: int | None = None,
    anchor: datetime | None = None,
    starts_at: datetime | None = None,
) -> datetime:
    """Return next_run_at for a task being created or resumed.

    A cron or interval task's first run is strictly after ``now`` (and not before
    ``starts_at``): runs missed while paused are not replayed. A one-shot runs at
    ``run_at`` (at once if already past).
    """
    if sum(value is not None for value in (cron, every_seconds, run_at)) > 1:
        raise ScheduleError("run_at", "a task has one of a cron expression, an every interval or a run_at")
    after = first_run_from(now, starts_at)
    if cron is not None:
        return next_run_after(cron, _cron_zone(timezone), after)
    if every_seconds is not None:
        if anchor is None:
            raise ScheduleError("anchor", "an every interval needs an anchor")
        return first_every_run(every_seconds=every_seconds, anchor=anchor, after=after)
    if run_at is None:
        raise ScheduleError("cron", "a task needs a cron expression, an every interval or a run_at")
    return validate_run_at(run_at)


def next_run_for(
    *, cron: str | None, timezone: str | None, prev: datetime, every_seconds: int | None = None
) -> datetime | None:
    """Return next_run_at once the job for ``prev`` exists; None for a one-shot.

    The next run comes from the previous next_run_at, never from the clock, so
    after an outage each tick creates the next missed run. An interval's is the
    previous plus the interval: fixed UTC spacing, whatever the zone's DST.
    """
    if every_seconds is not None:
        return prev + timedelta(seconds=every_seconds)
    if cron is None:
        return None
    return next_run_after(cron, _cron_zone(timezone), prev)


def _cron_zone(timezone: str | None) -> ZoneInfo:
    if timezone is None:
        raise ScheduleError("timezone", "a cron task needs a time zone, e.g. 'UTC' or 'Europe/Madrid'")
    return parse_timezone(timezone)
