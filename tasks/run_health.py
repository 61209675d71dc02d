"""How a task is doing, pure: its last run, its dead jobs in a row, and when that pauses it.

The executor's result batch and the reconciler's sweep apply this per task (one UPDATE
per batch, jobs.queue.task_health; a lease expired into a retry is RETRYING): a
success resets the count, a dead job adds one, a retry leaves it; reaching the
task's `auto_pause_after` (or the AUTO_PAUSE_AFTER_DEAD_JOBS default; 0 = never)
pauses an active task, with the reason the API and the admin show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

SUCCEEDED = "succeeded"
RETRYING = "retrying"
DEAD = "dead"
CANCELLED = "cancelled"  # a retry of a task paused or deleted meanwhile
LAST_RUN_STATUSES = (SUCCEEDED, RETRYING, DEAD, CANCELLED)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One written result of the batch, in the order the batch holds them (oldest first)."""

    job_id: bytes
    scheduled_at: datetime
    outcome: str  # succeeded | retrying | dead
    http_status: int | None


@dataclass(frozen=True, slots=True)
class Health:
    consecutive_failures: int
    last: Attempt
    pause: bool
    paused_reason: str


def auto_pause_reason(count: int) -> str:
    return f"paused automatically after {count} dead jobs in a row"


def next_health(
    *,
    status: str,
    consecutive_failures: int,
    auto_pause_after: int | None,
    default_auto_pause_after: int,
    attempts: Sequence[Attempt],
) -> Health:
    """The task's health after `attempts` (at least one), from its current `status` and count."""
    if not attempts:
        raise ValueError("at least one attempt")
    count = consecutive_failures
    died = False  # the count grew in this batch (a dead job after its last success)
    for attempt in attempts:
        if attempt.outcome == SUCCEEDED:
            count, died = 0, False
        elif attempt.outcome == DEAD:
            count, died = count + 1, True
    threshold = default_auto_pause_after if auto_pause_after is None else auto_pause_after
    # At or past the threshold, not only on crossing it: a threshold lowered below the count (a PATCH
    # of auto_pause_after, a smaller default) pauses at the next dead job instead of never.
    pause = status == "active" and threshold > 0 and died and count >= threshold
    last = attempts[-1]
    if last.outcome == RETRYING and (status != "active" or pause):
        last = Attempt(last.job_id, last.scheduled_at, CANCELLED, last.http_status)  # the write cancels it
    return Health(count, last, pause, auto_pause_reason(count) if pause else "")
