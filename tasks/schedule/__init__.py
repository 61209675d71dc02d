"""Schedules: what a task's schedule may say, and when it fires.

- ``cron``: the syntax (cron expressions, the time-zone allowlist, ``ScheduleError``);
- ``runs``: the next-run maths in UTC instants across DST gaps and overlaps;
- ``every``: interval schedules (``every`` + ``anchor``), fixed UTC spacing;
- ``window``: a run's call time inside its flexible window;
- ``bounds``: ``starts_at``, ``ends_at``, ``max_runs`` and completion;
- ``overlap``: the overlap policies the scheduler's SQL applies;
- ``missed``: the missed-runs policy; ``preview``: runs for people.

Pure (no Django). Import the public names from here.
"""

from tasks.schedule.cron import MAX_CRON_LENGTH, MAX_TIMEZONE_LENGTH, ScheduleError, parse_timezone, validate_cron
from tasks.schedule.runs import NextRunMemo, first_run, next_run_after, next_run_for, validate_run_at

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
