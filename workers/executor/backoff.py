"""The retry rule, pure: backoff_base x 2^(attempt - 1), capped at one day."""

from __future__ import annotations

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
