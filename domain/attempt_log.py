"""The attempt log: the one reader of the format its two writers share.

The executor's fenced result write (`jobs/sql/executor.sql` result_write) and the
reconciler's lease expiry (`jobs/sql/reconciler.sql`) append an entry to the job's
`attempts` text, which travels as is into both history stores. The text is a JSON
array, oldest first, of at most `KEPT` entries, each itself an array:

    [attempt, finished_at, duration_ms, status, http_status, error]

`finished_at` is Unix time in milliseconds, from the database clock;
`duration_ms` runs from the call's start to its result (for a lease taken back, from
when the call was due to begin), so the start is `finished_at - duration_ms` and is
not stored. Arrays and epoch numbers, not keyed objects with formatted times: the
entry's size is most of what the log costs the hot result write (docs/benchmarks-notes.md;
`python -m bench.result_write`). Logs written before that shape (keyed
objects, times as 'YYYY-MM-DD HH:MM:SS.fff' UTC text) are still read: the history stores
keep them for their TTL. Neutral (no app imports): jobs and history both carry the text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
from dataclasses import dataclass

KEPT = 20  # the writers drop the oldest entry past this many (SQL literals: keep them equal)
_FIELDS = 6


@dataclass(frozen=True, slots=True)
class Attempt:
    attempt: int
    started_at: dt.datetime | None  # None when no duration was measured
    finished_at: dt.datetime
    duration_ms: int | None
    status: str  # the job's status after it: succeeded, pending (a retry), dead or cancelled
    http_status: int | None
    error: str | None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _attempt(entry: object) -> Attempt | None:
    if isinstance(entry, dict):
        return _keyed_attempt(entry)
    if not isinstance(entry, list) or len(entry) != _FIELDS:
        return None
    attempt, finished_ms, duration, status, http_status, error = entry
    if _int(attempt) is None or _int(finished_ms) is None or not isinstance(status, str):
        return None
    return _make(attempt, _EPOCH + dt.timedelta(milliseconds=finished_ms), duration, status, http_status, error)


def _make(
    attempt: int, finished_at: dt.datetime, duration: object, status: str, http_status: object, error: object
) -> Attempt:
    duration_ms = _int(duration)
    return Attempt(
        attempt=attempt,
        started_at=None if duration_ms is None else finished_at - dt.timedelta(milliseconds=duration_ms),
        finished_at=finished_at,
        duration_ms=duration_ms,
        status=status,
        http_status=_int(http_status),
        error=error if isinstance(error, str) else None,
    )


def _keyed_attempt(entry: dict) -> Attempt | None:
    """An entry of the first shape: {"attempt", "finished_at": "YYYY-MM-DD HH:MM:SS.fff", ...}."""
    attempt, status, finished = _int(entry.get("attempt")), entry.get("status"), entry.get("finished_at")
    if attempt is None or not isinstance(status, str) or not isinstance(finished, str):
        return None
    try:
        finished_at = dt.datetime.fromisoformat(finished).replace(tzinfo=dt.UTC)
    except ValueError:
        return None
    made = _make(attempt, finished_at, entry.get("duration_ms"), status, entry.get("http_status"), entry.get("error"))
    started = entry.get("started_at")  # kept in that shape even without a duration (an expired lease)
    if isinstance(started, str):
        with contextlib.suppress(ValueError):
            made = dataclasses.replace(made, started_at=dt.datetime.fromisoformat(started).replace(tzinfo=dt.UTC))
    return made


def read_attempts(text: str | None) -> list[Attempt]:
    """The log's entries, oldest first (none before the first result); an unreadable entry is left out."""
    if not text:
        return []
    try:
        entries = json.loads(text)
    except ValueError:
        return []
    if not isinstance(entries, list):
        return []
    return [attempt for attempt in map(_attempt, entries) if attempt is not None]
