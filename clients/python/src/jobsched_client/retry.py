"""When to retry and how long to wait (pure: no I/O).

Only 429 and 503 are retried: both say "nothing was done, come back later".
Every request the SDK retries is safe to repeat: creates and runs carry an
Idempotency-Key, edits an If-Match, the rest are reads or deletes.
"""

from __future__ import annotations

import email.utils
import math
from dataclasses import dataclass
from datetime import UTC, datetime

RETRIED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` in all (1: never retry); waits follow Retry-After, else base * 2**n, never above `max_delay`."""

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, *, retry_after: str | None, attempt: int) -> float:
        """Seconds to wait before attempt `attempt + 1` (attempt counts from 1)."""
        hinted = retry_after_seconds(retry_after)
        wait = hinted if hinted is not None else self.base_delay * 2 ** (attempt - 1)
        return min(max(wait, 0.0), self.max_delay)


NO_RETRY = RetryPolicy(attempts=1)


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 10.2.3); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None
