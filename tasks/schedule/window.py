"""Flexible windows: a run is called at its nominal time plus an offset in [0, window_seconds).

Pure (no Django). The offset is a hash of (task id, nominal time), so every scheduler,
every replay of a tick and the preview compute the same call time for the same run, and
a task's runs land on different seconds of the window from one run to the next. The run
keeps its nominal time as its identity (scheduled_at, X-Scheduled-At); only the job's first
next_attempt_at moves. Resolution: milliseconds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta

from tasks.schedule.cron import ScheduleError

__all__ = ["MAX_WINDOW_SECONDS", "call_time", "check_window_fits", "shortest_gap", "window_offset"]

MAX_WINDOW_SECONDS = 86400
# The cron sample the window is checked against: its next runs, this many at most, within this horizon.
GAP_SAMPLE_RUNS = 1000
GAP_SAMPLE_HORIZON = timedelta(days=400)
_MINUTE = timedelta(minutes=1)


def window_offset(task_id: bytes, scheduled_at: datetime, window_seconds: int) -> timedelta:
    """The run's offset: blake2b of the task id and the nominal time (naive UTC or aware), in milliseconds."""
    if window_seconds <= 0:
        return timedelta(0)
    stamp = scheduled_at.replace(tzinfo=None).isoformat(timespec="microseconds").encode()
    digest = hashlib.blake2b(task_id + b"|" + stamp, digest_size=8).digest()
    return timedelta(milliseconds=int.from_bytes(digest, "big") % (window_seconds * 1000))


def call_time(task_id: bytes, scheduled_at: datetime, window_seconds: int) -> datetime:
    """When the run is called: its nominal time plus its offset."""
    return scheduled_at + window_offset(task_id, scheduled_at, window_seconds)


def shortest_gap(first: datetime, next_run: Callable[[datetime], datetime | None]) -> timedelta | None:
    """The shortest time between consecutive runs from `first` on (sampled); None: fewer than two runs.

    Runs are on whole minutes, so a one-minute gap ends the walk at once.
    """
    shortest: timedelta | None = None
    previous, horizon = first, first + GAP_SAMPLE_HORIZON
    for _ in range(GAP_SAMPLE_RUNS):
        run = next_run(previous)
        if run is None or run > horizon:
            break
        gap = run - previous
        shortest = gap if shortest is None else min(shortest, gap)
        if shortest <= _MINUTE:
            break
        previous = run
    return shortest


def check_window_fits(window_seconds: int, gap: timedelta | None) -> None:
    """Refuse a window longer than the shortest interval: two runs' windows would overlap."""
    if gap is not None and window_seconds > gap.total_seconds():
        raise ScheduleError(
            "window_seconds",
            f"must not be longer than the schedule's shortest interval ({int(gap.total_seconds())} s)",
        )
