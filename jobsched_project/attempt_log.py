"""The attempt log: the one reader of the format its two writers share.

The executor's fenced result write (`jobs/sql/executor.sql` result_write) and the
reconciler's lease expiry (`jobs/sql/reconciler.sql`) append an entry to the job's
`attempts` text, which travels as is into both history stores. The text is a JSON
array, oldest first, of at most `KEPT` entries, each itself an array:

    [attempt, finished_at, duration_ms, status, http_status, error]

`finished_at` is Unix time in seconds with milliseconds, from the database clock;
`duration_ms` runs from the call's start to its result (for a lease taken back, from
when the call was due to begin), so the start is `finished_at - duration_ms` and is
not stored. Arrays and epoch numbers, not keyed objects with formatted times: the
entry's size is most of what the log costs the hot result write (keyed objects of
~250 bytes cost +12.7 to +17.5 percent per 500-result batch, these ~50 bytes a few
percent; `python -m bench.result_write`). Neutral (no app imports): jobs and history
both carry the text.
"""

from __future__ import annotations

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


def _instant(epoch_seconds: float) -> dt.datetime:
    # Whole milliseconds, as the database wrote them (a float of ~1.8e9 s holds them exactly enough).
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=round(epoch_seconds * 1000))


def _attempt(entry: object) -> Attempt | None:
    if not isinstance(entry, list) or len(entry) != _FIELDS:
        return None
    attempt, finished, duration, status, http_status, error = entry
    if not isinstance(attempt, int) or not isinstance(finished, int | float) or not isinstance(status, str):
        return None
    finished_at = _instant(finished)
    duration_ms = duration if isinstance(duration, int) else None
    started_at = None if duration_ms is None else finished_at - dt.timedelta(milliseconds=duration_ms)
    return Attempt(
        attempt=attempt,
        started_at=started_at,
        finished_at=finished_at,
        duration_ms=duration_ms,
        status=status,
        http_status=http_status if isinstance(http_status, int) else None,
        error=error if isinstance(error, str) else None,
    )


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
