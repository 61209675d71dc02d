"""The retry rule, pure: backoff_base x 2^(attempt - 1), capped at one day; or the receiver's Retry-After."""

from __future__ import annotations

import email.utils
import re
from datetime import UTC, datetime

MAX_BACKOFF_SECONDS = 24 * 3600
# 2**17 seconds already exceeds a day for any base >= 1: no need for bigger powers.
_MAX_EXPONENT = 17


def retry_delay_seconds(*, attempt: int, backoff_base_seconds: int) -> int:
    """Seconds to wait before the next attempt after attempt number `attempt` failed."""
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    exponent = min(attempt - 1, _MAX_EXPONENT)
    return min(MAX_BACKOFF_SECONDS, max(0, backoff_base_seconds) * 2**exponent)


def is_last_attempt(*, attempt: int, max_attempts: int) -> bool:
    """A failure at or beyond the budget makes the job dead instead of retried."""
    return attempt >= max_attempts


# A receiver that answers these with Retry-After says when to come back (RFC 9110 section 10.2.3).
RETRY_AFTER_STATUSES = frozenset({429, 503})
_DELAY_SECONDS = re.compile(r"[0-9]{1,10}", re.ASCII)


def retry_after_seconds(value: str | None, *, now: datetime) -> int | None:
    """The wait a Retry-After header asks for (delay-seconds or an HTTP-date), capped at a day; None if unusable.

    A date in the past means "now" (0). `now` is the executor's clock, against the receiver's
    date: the header compares the two clocks, there is no other to use.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return min(int(value), MAX_BACKOFF_SECONDS)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):  # a year past datetime's range overflows
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # an HTTP-date is GMT
    seconds = int((when - now).total_seconds() + 0.999)  # rounded up: never earlier than asked
    return min(max(0, seconds), MAX_BACKOFF_SECONDS)


def retry_after_for(status: int | None, value: str | None, *, now: datetime) -> int | None:
    """The wait asked for, read only on the statuses that give Retry-After a meaning here (429, 503)."""
    if status not in RETRY_AFTER_STATUSES:
        return None
    return retry_after_seconds(value, now=now)
