"""The headers a job's attempt carries besides the task's own, built alike by the executor and the dry run.

Pure: the caller passes the instant of sending, the resolved credential (or a
mask, for the dry run) and the tenant's live signing keys (the dry run has the
signature withheld: its shape only). Names are in
outbound.headers (the API refuses every one of them on a task).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from outbound.headers import (
    ATTEMPT_HEADER,
    DEADLINE_HEADER,
    IDEMPOTENCY_KEY_HEADER,
    SCHEDULED_AT_HEADER,
    SECRET_HEADER,
    USER_AGENT_HEADER,
)
from outbound.signature import signature_headers

USER_AGENT = "jobsched-executor/1.0"


@functools.lru_cache(maxsize=4096)
def _second_text(epoch_second: int) -> str:
    """`2027-01-01T09:00:00`, formatted once per distinct second (strftime showed in the
    executor's profile, `make bench --profile`; a burst's jobs share their seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_second))


def http_instant(value: datetime) -> str:
    """`2027-01-01T09:00:00.000Z`: UTC, milliseconds (truncated, as strftime's %f cut to three).

    The cache is keyed by the whole epoch second (an int: no `replace(microsecond=0)` per call,
    which cost more than the format). `int(timestamp())` is exact at microsecond resolution (a
    double's error here is ~0.2 µs, a whole second is at least 1 µs away).
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # naive means UTC, as every connection runs in UTC
    return f"{_second_text(int(value.timestamp()))}.{value.microsecond // 1000:03d}Z"


# X-Scheduled-At formatted once per distinct run: a burst's jobs share their second (the executor's
# hot path kept this cache before the delivery headers moved here; the deadline differs per call).
_scheduled_at_text = functools.lru_cache(maxsize=4096)(http_instant)


def our_headers(
    *,
    job_id: str,
    scheduled_at: datetime,
    attempt: int,
    sent_at: datetime,
    timeout_seconds: int,
    secret: str | None,
    signing_keys: Sequence[bytes],
    body: bytes,
    withhold_signature: bool = False,
) -> dict[str, str]:
    """Our delivery headers for one attempt; signed (Standard Webhooks) when the tenant has signing keys.

    `withhold_signature` (the dry run) puts the signature's shape in its header, not a value.
    """
    headers = {
        IDEMPOTENCY_KEY_HEADER: job_id,
        SCHEDULED_AT_HEADER: _scheduled_at_text(scheduled_at),
        ATTEMPT_HEADER: str(attempt),
        USER_AGENT_HEADER: USER_AGENT,
        # The receiver may stop working on the call past this: we no longer wait for its answer.
        DEADLINE_HEADER: http_instant(sent_at + timedelta(seconds=timeout_seconds)),
    }
    if secret is not None:
        headers[SECRET_HEADER] = secret
    if signing_keys:
        # webhook-id is the job id, the same on every attempt; the timestamp is this attempt's.
        headers.update(
            signature_headers(
                keys=signing_keys,
                msg_id=job_id,
                timestamp=int(sent_at.timestamp()),
                body=body,
                withhold=withhold_signature,
            )
        )
    return headers
