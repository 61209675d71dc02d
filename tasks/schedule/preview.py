"""The next fire times of a schedule, for people: UTC, the task's local time, and daylight-saving changes marked.

Pure: the same maths the scheduler runs (tasks.schedule.runs), so a preview
shows exactly the instants the scheduler will use, gaps and overlaps included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from tasks.schedule.cron import parse_timezone
from tasks.schedule.runs import ScheduleError, first_run, next_run_for

MAX_RUNS = 100


@dataclass(frozen=True)
class PreviewRun:
    at: datetime  # UTC
    local: datetime  # in the schedule's zone
    utc_offset: str  # "+02:00"
    dst: bool  # the zone is on daylight-saving time at this run
    # The offset changed since the previous run (or since `after` for the first): a DST transition lies between.
    offset_changed_from: str | None
    ambiguous_local_time: bool  # the local time occurs twice (fall-back overlap); `utc_offset` says which
    late: bool = False  # already past: the scheduler, behind, fires it as soon as it reaches it
    # When the call is made: `at` plus the task's window offset (tasks.schedule.window); `at`
    # without a window; None for an unsaved schedule with a window (the offset needs the task's id).
    call_at: datetime | None = None


def _offset(value: datetime) -> str:
    offset = value.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _ambiguous(local: datetime) -> bool:
    other = local.replace(fold=1 - local.fold)
    return other.utcoffset() != local.utcoffset() and other.astimezone(UTC).astimezone(local.tzinfo) == other


def _run(at: datetime, zone: ZoneInfo, previous_offset: str, *, late: bool = False) -> PreviewRun:
    local = at.astimezone(zone)
    offset = _offset(local)
    return PreviewRun(
        at=at.astimezone(UTC),
        local=local,
        utc_offset=offset,
        dst=bool(local.dst()),
        offset_changed_from=previous_offset if offset != previous_offset else None,
        ambiguous_local_time=_ambiguous(local),
        late=late,
    )


def describe_runs(runs: list[datetime], *, timezone: str | None, after: datetime, now: datetime) -> list[PreviewRun]:
    """Runs already planned (a saved task's, by the scheduler's missed-run rule) in UTC and local time.

    `after` is the instant before the first run (its offset marks a transition before it); a run
    before `now` is late.
    """
    zone = parse_timezone(timezone) if timezone else ZoneInfo("UTC")
    offset = _offset(after.astimezone(zone))
    described: list[PreviewRun] = []
    for at in runs:
        run = _run(at, zone, offset, late=at < now)
        offset = run.utc_offset
        described.append(run)
    return described


def within_limits(runs: list[datetime], *, ends_at: datetime | None, runs_left: int | None) -> list[datetime]:
    """The runs a task's ends_at and remaining max_runs allow (tasks.schedule.bounds)."""
    kept = [at for at in runs if ends_at is None or at <= ends_at]
    return kept if runs_left is None else kept[: max(runs_left, 0)]


def preview_runs(
    *,
    cron: str | None,
    timezone: str | None,
    run_at: datetime | None,
    after: datetime,
    count: int,
    every_seconds: int | None = None,
    anchor: datetime | None = None,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    max_runs: int | None = None,
) -> list[PreviewRun]:
    """`count` (1-MAX_RUNS) runs of a cron or interval strictly after `after` (within its limits), or a one-shot's."""
    if not 1 <= count <= MAX_RUNS:
        raise ValueError(f"count must be 1 to {MAX_RUNS}")
    if cron is None and every_seconds is None:
        if run_at is None:
            raise ScheduleError("cron", "a task needs a cron expression, an every interval or a run_at")
        return [_run(run_at, ZoneInfo("UTC"), "+00:00")]
    if timezone is None and cron is not None:
        raise ScheduleError("timezone", "a cron task needs a time zone")
    timezone = timezone or "UTC"
    zone = parse_timezone(timezone)
    found: list[datetime] = []
    at: datetime | None = first_run(
        cron=cron,
        timezone=timezone,
        run_at=None,
        now=after,
        every_seconds=every_seconds,
        anchor=anchor,
        starts_at=starts_at,
    )
    while at is not None and len(found) < count and (ends_at is None or at <= ends_at):
        found.append(at)
        at = next_run_for(cron=cron, timezone=timezone, prev=at, every_seconds=every_seconds)
    found = within_limits(found, ends_at=ends_at, runs_left=max_runs)
    runs: list[PreviewRun] = []
    offset = _offset(after.astimezone(zone))
    for at in found:
        run = _run(at, zone, offset)
        offset = run.utc_offset
        runs.append(run)
    return runs
