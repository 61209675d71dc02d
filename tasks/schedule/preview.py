"""The next fire times of a schedule, for people: UTC, the task's local time, and daylight-saving changes marked.

Pure: the same maths the scheduler runs (tasks.schedule.runs), so a preview
shows exactly the instants the scheduler will use, gaps and overlaps included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from tasks.schedule.cron import parse_timezone
from tasks.schedule.runs import ScheduleError, next_run_after

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


def preview_runs(
    *, cron: str | None, timezone: str | None, run_at: datetime | None, after: datetime, count: int
) -> list[PreviewRun]:
    """`count` (1-MAX_RUNS) runs of a cron strictly after `after`, or a one-shot's one run."""
    if not 1 <= count <= MAX_RUNS:
        raise ValueError(f"count must be 1 to {MAX_RUNS}")
    if cron is None:
        if run_at is None:
            raise ScheduleError("cron", "a task needs a cron expression or a run_at")
        return [_run(run_at, ZoneInfo("UTC"), "+00:00")]
    if timezone is None:
        raise ScheduleError("timezone", "a cron task needs a time zone")
    zone = parse_timezone(timezone)
    runs: list[PreviewRun] = []
    previous = after
    offset = _offset(after.astimezone(zone))
    for _ in range(count):
        previous = next_run_after(cron, zone, previous)
        run = _run(previous, zone, offset)
        offset = run.utc_offset
        runs.append(run)
    return runs
