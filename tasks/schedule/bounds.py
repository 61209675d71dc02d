"""Start, end and run limits of a schedule: `starts_at`, `ends_at`, `max_runs`, pure.

- no run before ``starts_at``: the first run is computed from it (``first_run_from``), and
  runs only ever go forward from there;
- no run after ``ends_at`` (a run at ends_at itself is made);
- at most ``max_runs`` runs scheduled (the task's ``runs_scheduled``, counted by the tick while
  the task has a limit, from when it got one; skipped runs included: a run the overlap policy
  skipped was still a run).

A task past either limit is *completed*: no job, next_run_at NULL, status ``completed``
(the tick's advance statement writes it, jobs/sql/scheduler.sql).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tasks.schedule.missed import Plan

# The largest max_runs a task may ask for (a bound on every count the API accepts).
MAX_RUNS_BOUND = 1_000_000


def first_run_from(now: datetime, starts_at: datetime | None) -> datetime:
    """The instant a first run is computed strictly after: `now`, or just before starts_at if later."""
    if starts_at is not None and starts_at - timedelta(microseconds=1) > now:
        return starts_at - timedelta(microseconds=1)
    return now


def bound_plan(plan: Plan, *, ends_at: datetime | None, max_runs: int | None, runs_scheduled: int) -> tuple[Plan, bool]:
    """The plan within the task's limits, and whether the task completes with this tick.

    Times are compared as given (the scheduler passes naive UTC throughout).
    """
    scheduled = plan.scheduled_at
    if scheduled is not None and (
        (ends_at is not None and scheduled > ends_at) or (max_runs is not None and runs_scheduled >= max_runs)
    ):
        return Plan(None, None), True
    runs = runs_scheduled + (scheduled is not None)
    following = plan.next_run_at
    if (max_runs is not None and runs >= max_runs) or (
        ends_at is not None and following is not None and following > ends_at
    ):
        return Plan(scheduled, None), True
    return plan, False
