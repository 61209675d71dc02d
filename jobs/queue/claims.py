"""The claim: pending → running for up to `limit` due jobs, in one short transaction.

Raw SQL (jobs/sql/executor.sql) on the calling thread's connection, which runs
READ COMMITTED (settings): under REPEATABLE READ the claim's gap locks blocked
the scheduler's inserts for seconds. The transaction commits before the caller
makes any HTTP call, so a row lock lasts milliseconds and a job is never fired
without a committed claim.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from jobs.queue.statements import STATEMENTS


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """What firing a claimed job needs: the request snapshot and the fence (not the job record:
    no result yet, and the headers, body and secret the history never keeps)."""

    id: uuid.UUID
    tenant_id: str
    task_id: uuid.UUID
    scheduled_at: datetime
    attempt: int  # after the claim's +1: the fencing token of this run
    max_attempts: int
    next_attempt_at: datetime
    timeout_seconds: int
    backoff_base_seconds: int
    method: str
    url: str
    headers: dict[str, str]
    body: str
    secret_ref: str | None
    # Seconds from the claim (database clock) until the job is due; <= 0 means now.
    due_in: float


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _claimed_from_row(row: tuple[Any, ...]) -> ClaimedJob:
    """A `claim_select` row (its column order) as the job this worker now holds."""
    (
        job_id,
        tenant_id,
        task_id,
        scheduled_at,
        attempt,
        max_attempts,
        next_attempt_at,
        timeout,
        backoff_base,
        method,
        url,
        headers,
        body,
        secret_ref,
        db_now,
    ) = row
    next_attempt_at = _utc(next_attempt_at)
    return ClaimedJob(
        id=uuid.UUID(bytes=bytes(job_id)),
        tenant_id=tenant_id,
        task_id=uuid.UUID(bytes=bytes(task_id)),
        scheduled_at=_utc(scheduled_at),
        attempt=attempt + 1,  # locked since the SELECT, so this is what the UPDATE's attempt + 1 wrote
        max_attempts=max_attempts,
        next_attempt_at=next_attempt_at,
        timeout_seconds=timeout,
        backoff_base_seconds=backoff_base,
        method=method,
        url=url,
        headers=json.loads(headers) if isinstance(headers, str | bytes) and headers else (headers or {}),
        body=body or "",
        secret_ref=secret_ref or None,
        due_in=(next_attempt_at - _utc(db_now)).total_seconds(),
    )


def due_priorities(*, lookahead_seconds: float) -> list[int]:
    """Priority levels that have a job due within the lookahead (no locks)."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["claim_due_priorities"].bind({"lookahead_seconds": lookahead_seconds}))
        return sorted(row[0] for row in cursor.fetchall())


def claim_due(*, worker_id: str, limit: int, lookahead_seconds: float) -> list[ClaimedJob]:
    """Claim up to `limit` jobs due within `lookahead_seconds`, priority 0 first.

    Equivalent to the seed's `ORDER BY priority, next_attempt_at LIMIT n FOR
    UPDATE SKIP LOCKED`, read one priority level at a time so an empty poll costs
    a few index dives instead of a scan over every future job.
    """
    if limit <= 0:
        return []
    # Read outside the transaction, so it can be stale: a level emptied meanwhile yields no rows
    # (SKIP LOCKED decides), a level that became due meanwhile is claimed by the next poll.
    levels = due_priorities(lookahead_seconds=lookahead_seconds)
    if not levels:
        return []
    rows: list[tuple[Any, ...]] = []
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        for priority in levels:
            params = {"priority": priority, "lookahead_seconds": lookahead_seconds, "limit": limit - len(rows)}
            cursor.execute(*STATEMENTS["claim_select"].bind(params))
            rows.extend(cursor.fetchall())
            if len(rows) >= limit:
                break
        if not rows:
            return []
        ids = [(row[0],) for row in rows]
        cursor.execute(*STATEMENTS["claim_mark_running"].bind({"worker_id": worker_id}, ids))
        # The rows are locked by our SELECT ... FOR UPDATE, so every one of them must change.
        if cursor.rowcount != len(rows):
            raise RuntimeError(f"claim marked {cursor.rowcount} of {len(rows)} locked rows")
    return [_claimed_from_row(row) for row in rows]
