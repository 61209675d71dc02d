"""What a late scheduler does with a task's missed runs: the task's `missed_runs` policy, pure.

A run is *missed* when the scheduler reaches it more than `missed_after` past
its time (an outage, a backlog); a run reached on time is scheduled as always.
For a missed run:

- ``all`` (the default, the seed's rule): replay the missed runs oldest first, one
  per tick, but at most `replay_max` of them: when more were missed, the oldest
  are skipped and the last `replay_max` are replayed;
- ``latest``: one job, for the most recent missed run; the others are skipped;
- ``skip``: no job; the task continues at its first run in the future.

Bounded work: one call walks at most `scan_max` runs forward (by default the
larger of 1000 and twice replay_max; runs are only ever computed forward, with
the scheduler's own DST rules). A task further behind moves as far as the walk
reached, creates nothing yet, and is planned again at the next tick (the
scheduler ticks again at once while a task is still due).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

ALL = "all"
LATEST = "latest"
SKIP = "skip"
POLICIES = (ALL, LATEST, SKIP)
DEFAULT_SCAN_MAX = 1000


@dataclass(frozen=True, slots=True)
class Plan:
    scheduled_at: datetime | None  # the job this tick creates, or None
    next_run_at: datetime | None  # the task's next_run_at after the tick (None: no more runs)


def plan_due_run(
    *,
    policy: str,
    prev: datetime,
    now: datetime,
    next_run: Callable[[datetime], datetime | None],
    missed_after: timedelta,
    replay_max: int,
    scan_max: int | None = None,
) -> Plan:
    """The plan for a task due at `prev` (its next_run_at), seen by a tick at `now`.

    `next_run(t)` is the task's run after `t` (None: a one-shot, or no next run).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown missed-runs policy {policy!r}")
    scan_max = max(DEFAULT_SCAN_MAX, 2 * replay_max) if scan_max is None else scan_max
    if replay_max < 1 or scan_max <= replay_max:
        raise ValueError("need 1 <= replay_max < scan_max")
    if prev >= now - missed_after:
        return Plan(prev, next_run(prev))  # on time: as always
    # Missed. Walk forward: `runs` are the runs <= now from prev on; `after` the first one past now.
    limit = replay_max + 1 if policy == ALL else scan_max
    runs = [prev]
    after: datetime | None = None
    reached = False
    while len(runs) <= limit:
        candidate = next_run(runs[-1])
        if candidate is None or candidate > now:
            after, reached = candidate, True
            break
        runs.append(candidate)
    if policy == ALL:
        if reached and len(runs) <= replay_max:
            return Plan(prev, runs[1] if len(runs) > 1 else after)  # within the cap: replay as always
        return _replay_the_last(
            runs, after, reached, now=now, next_run=next_run, replay_max=replay_max, scan_max=scan_max
        )
    if not reached:
        return Plan(None, runs[-1])  # still far behind: move on, plan again next tick
    if policy == LATEST:
        return Plan(runs[-1], after)
    return Plan(None, after)  # SKIP


def _replay_the_last(
    runs: list[datetime],
    after: datetime | None,
    reached: bool,
    *,
    now: datetime,
    next_run: Callable[[datetime], datetime | None],
    replay_max: int,
    scan_max: int,
) -> Plan:
    """More than replay_max runs were missed: skip the oldest, so that only the last replay_max are replayed."""
    while not reached and len(runs) < scan_max:
        candidate = next_run(runs[-1])
        if candidate is None or candidate > now:
            after, reached = candidate, True
            break
        runs.append(candidate)
    if not reached:
        # At least len(runs) runs were missed and more follow: the first len(runs) - replay_max are
        # certainly older than the last replay_max. Move past them; plan again next tick.
        return Plan(None, runs[len(runs) - replay_max])
    first = len(runs) - replay_max  # the oldest run still replayed
    return Plan(runs[first], runs[first + 1] if first + 1 < len(runs) else after)


class WalkLimitReached(Exception):
    """Following the scheduler took more than `walk_max` next-run computations (a task far behind)."""

    def __init__(self, runs: list[datetime]) -> None:
        super().__init__(f"stopped after {len(runs)} runs")
        self.runs = runs  # the runs planned before the limit


def planned_runs(
    *,
    policy: str,
    next_run_at: datetime,
    now: datetime,
    next_run: Callable[[datetime], datetime | None],
    missed_after: timedelta,
    replay_max: int,
    count: int,
    walk_max: int,
) -> list[datetime]:
    """The first `count` runs the scheduler will fire for a task due at `next_run_at`, seen at `now`.

    Tick after tick of `plan_due_run`, as a scheduler catching up at `now` runs it (it ticks again
    at once while a task is due), so the runs its policy skips are not among them: one rule, the
    planner's. Each distinct next run is computed once; past `walk_max` of them WalkLimitReached
    carries the runs planned so far.
    """
    computed: dict[datetime, datetime | None] = {}

    def memo(prev: datetime) -> datetime | None:
        if prev not in computed:
            if len(computed) >= walk_max:
                raise WalkLimitReached(runs)
            computed[prev] = next_run(prev)
        return computed[prev]

    runs: list[datetime] = []
    prev: datetime | None = next_run_at
    while prev is not None and len(runs) < count:
        plan = plan_due_run(
            policy=policy, prev=prev, now=now, next_run=memo, missed_after=missed_after, replay_max=replay_max
        )
        if plan.scheduled_at is not None:
            runs.append(plan.scheduled_at)
        prev = plan.next_run_at  # always later than prev: the walk only goes forward
    return runs
