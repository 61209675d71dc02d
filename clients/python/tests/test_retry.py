"""Retry-After and backoff (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from jobsched_client.retry import RetryPolicy, retry_after_seconds


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2027, 1, 4, 8, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Mon, 04 Jan 2027 08:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Mon, 04 Jan 2027 07:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_the_wait_follows_the_hint_else_doubles_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=10)
    assert policy.delay(retry_after="3", attempt=1) == 3
    assert [policy.delay(retry_after=None, attempt=n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert policy.delay(retry_after="3600", attempt=1) == 10
