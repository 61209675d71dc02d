"""The database's clock as seen from this process: an offset to the local monotonic clock, with its error.

Jobs are due on the database's clock (`NOW(3)`), timers run on the local
monotonic clock. One reading is a round trip of `SELECT NOW(6)` timed locally:
the database read its clock somewhere inside the round trip, so taking the
midpoint is wrong by at most half the round trip (plus the clock's resolution).
Of a few readings the one with the shortest round trip wins, so a reading that
waited on a busy server or a held GIL does not widen the bound; the estimate is
refreshed now and then, and an old reading's bound grows with the worst drift
the wall clock may show against the monotonic one (NTP slews at most 500 ppm).

Before this, a timer took `NOW(3)` from the claim and added the claim's whole
duration to be safe: under a burst that was most of the first call's lateness
(0.23-0.64 s). With the estimate a timer fires at the job's second, early by at
most the error bound (typically well under a millisecond on loopback).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

SAMPLES = 3
REFRESH_SECONDS = 10.0
RESOLUTION_SECONDS = 1e-6  # NOW(6)
DRIFT_PER_SECOND = 500e-6  # the fastest an NTP slew moves the wall clock against the monotonic one


@dataclass(frozen=True, slots=True)
class ClockReading:
    offset: float  # database time (epoch seconds) - local monotonic seconds
    error: float  # |true offset - offset| is at most this when the reading was taken
    taken_at: float  # local monotonic seconds


def epoch_seconds(value: datetime) -> float:
    """A database datetime (naive means UTC, as every connection runs in UTC) as epoch seconds."""
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def read_database_now() -> datetime:
    """The database's clock, on the calling thread's connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOW(6)")
        return cursor.fetchone()[0]


class DatabaseClock:
    """Maps database times to local monotonic times; `refresh()` runs the round trips (blocking)."""

    def __init__(
        self,
        read_now: Callable[[], datetime] = read_database_now,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        samples: int = SAMPLES,
        refresh_seconds: float = REFRESH_SECONDS,
        resolution_seconds: float = RESOLUTION_SECONDS,
    ) -> None:
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self._read_now = read_now
        self._monotonic = monotonic
        self._samples = samples
        self._refresh_seconds = refresh_seconds
        self._resolution = resolution_seconds
        self._reading: ClockReading | None = None

    @property
    def reading(self) -> ClockReading | None:
        return self._reading

    def stale(self) -> bool:
        """True before the first reading and once the last one is `refresh_seconds` old."""
        return self._reading is None or self._monotonic() - self._reading.taken_at >= self._refresh_seconds

    def refresh(self) -> ClockReading:
        """Take `samples` readings; keep the tightest, or the current one if, aged, it is still tighter."""
        best: ClockReading | None = None
        for _ in range(self._samples):
            before = self._monotonic()
            database_now = epoch_seconds(self._read_now())
            after = self._monotonic()
            reading = ClockReading(
                offset=database_now - (before + after) / 2,
                error=(after - before) / 2 + self._resolution,
                taken_at=after,
            )
            if best is None or reading.error < best.error:
                best = reading
        assert best is not None
        if self._reading is None or self.error_bound(best.taken_at) > best.error:
            self._reading = best
        return self._reading

    def error_bound(self, at: float | None = None) -> float:
        """How far the mapping may be off at local time `at` (now by default); inf before a reading."""
        if self._reading is None:
            return float("inf")
        age = max(0.0, (self._monotonic() if at is None else at) - self._reading.taken_at)
        return self._reading.error + age * DRIFT_PER_SECOND

    def local_time(self, database_time: datetime) -> float:
        """The local monotonic time at which the database's clock shows `database_time`."""
        if self._reading is None:
            raise RuntimeError("the database clock has not been read yet: call refresh() first")
        return epoch_seconds(database_time) - self._reading.offset

    def database_time(self, local: float | None = None) -> float:
        """The database's clock (epoch seconds) at local monotonic time `local` (now by default)."""
        if self._reading is None:
            raise RuntimeError("the database clock has not been read yet: call refresh() first")
        return (self._monotonic() if local is None else local) + self._reading.offset
