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

from django.conf import settings
from django.db import connection, transaction

from jobs.fairness import TenantCursor, cursor_after, interleave, next_round, share_slots
from jobs.sql import QUERIES, expand
from tasks import limits

PRIORITY_LEVELS = 10  # 0 = first ... 9 = last

# The fair claim's walk over tenants: statements of WALK_CHUNK_MIN..WALK_CHUNK_MAX tenants, at
# most WALK_MAX_TENANTS tenants with pending jobs per claim (the rest wait for the next claim,
# which starts where this one stopped); at most TAKE_ROUNDS takes (leftover slots go round again).
WALK_CHUNK_MIN = 64
WALK_CHUNK_MAX = 1000
WALK_MAX_TENANTS = 5000
TAKE_ROUNDS = 3

_CURSOR = TenantCursor()  # this process's round-robin position (the claim runs on one thread)


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job this worker holds, with everything needed to fire it."""

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


def _job_from_row(row: tuple[Any, ...]) -> ClaimedJob:
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
        cursor.execute(QUERIES["claim_due_priorities"], [lookahead_seconds] * PRIORITY_LEVELS)
        return sorted(row[0] for row in cursor.fetchall())


def claim_due_jobs(
    *, worker_id: str, limit: int, lookahead_seconds: float, cursor: TenantCursor | None = None
) -> list[ClaimedJob]:
    """Claim up to `limit` jobs due within `lookahead_seconds`: the fair claim, or with
    EXECUTOR_FAIR_CLAIM off the round-1 claim (priority first across all tenants).

    `cursor` is the round-robin position of this process (a module-wide one by default).
    """
    if limit <= 0:
        return []
    if settings.EXECUTOR_FAIR_CLAIM:
        return claim_fair_share(
            worker_id=worker_id, limit=limit, lookahead_seconds=lookahead_seconds, cursor=cursor or _CURSOR
        )
    return claim_priority_first(worker_id=worker_id, limit=limit, lookahead_seconds=lookahead_seconds)


def claim_priority_first(*, worker_id: str, limit: int, lookahead_seconds: float) -> list[ClaimedJob]:
    """Claim up to `limit` jobs due within `lookahead_seconds`, priority 0 first, across all tenants.

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
            cursor.execute(QUERIES["claim_select"], [priority, lookahead_seconds, limit - len(rows)])
            rows.extend(cursor.fetchall())
            if len(rows) >= limit:
                break
        if not rows:
            return []
        ids = [row[0] for row in rows]
        cursor.execute(expand(QUERIES["claim_mark_running"], len(ids), 1, marker="ids"), [worker_id, *ids])
        # The rows are locked by our SELECT ... FOR UPDATE, so every one of them must change.
        if cursor.rowcount != len(ids):
            raise RuntimeError(f"claim marked {cursor.rowcount} of {len(ids)} locked rows")
    return [_job_from_row(row) for row in rows]


# --- the fair claim -------------------------------------------------------------


def _branches(name: str, count: int, levels: list[int]) -> str:
    """`count` parenthesised copies of a per-tenant statement joined by UNION ALL, numbered 0..count-1."""
    # Without its comment and indentation (it is repeated per tenant, and parsed on every claim);
    # the levels are the probe's integers, written as literals (the list's length varies).
    lines = (line.strip() for line in QUERIES[name].splitlines() if not line.lstrip().startswith("--"))
    body = " ".join(lines).replace("{levels}", ", ".join(str(int(level)) for level in levels))
    return "\nUNION ALL\n".join(f"({body.replace('{n}', str(n))})" for n in range(count))


def _walk_due_tenants(
    *, start: str, need: int, levels: list[int], lookahead_seconds: float
) -> tuple[list[str], list[str]]:
    """Walk tenants with pending jobs after `start`, wrapping around to it; return (walked, due).

    Stops once `need` tenants with due jobs are found or WALK_MAX_TENANTS were walked.
    Two statements per chunk (no locks): the next tenants, then which of them have a due job.
    """
    walked: list[str] = []
    due: list[str] = []
    passes = [("fair_pending_tenants", None)] + ([("fair_pending_tenants_wrapped", start)] if start else [])
    with connection.cursor() as cursor:
        for query, until in passes:
            after = start if until is None else ""
            while len(due) < need and len(walked) < WALK_MAX_TENANTS:
                size = min(WALK_CHUNK_MAX, max(WALK_CHUNK_MIN, need - len(due)), WALK_MAX_TENANTS - len(walked))
                cursor.execute(QUERIES[query], {"after": after, "until": until, "limit": size})
                chunk = [row[0] for row in cursor.fetchall()]
                if not chunk:
                    break
                params: dict[str, Any] = {f"tenant_{n}": tenant for n, tenant in enumerate(chunk)}
                cursor.execute(
                    _branches("fair_due_tenant", len(chunk), levels), {**params, "lookahead_seconds": lookahead_seconds}
                )
                found = {row[0] for row in cursor.fetchall()}
                walked.extend(chunk)
                due.extend(tenant for tenant in chunk if tenant in found)
                after = chunk[-1]
                if len(chunk) < size:
                    break  # this pass reached its end
    return walked, due


def _running_counts(cursor: Any, tenant_ids: list[str]) -> dict[str, int]:
    params = {f"tenant_{n}": tenant for n, tenant in enumerate(tenant_ids)}
    tenants = ", ".join(f"%({name})s" for name in params)
    cursor.execute(QUERIES["fair_running_counts"].replace("{tenants}", tenants), params)
    return {tenant: count for tenant, count in cursor.fetchall()}


def _take(
    cursor: Any, *, worker_id: str, shares: dict[str, int], levels: list[int], lookahead_seconds: float
) -> list[tuple[Any, ...]]:
    """Lock each tenant's share of due jobs (one UNION ALL statement) and mark them running."""
    tenants = list(shares)
    params: dict[str, Any] = {"lookahead_seconds": lookahead_seconds}
    for n, tenant in enumerate(tenants):
        params[f"tenant_{n}"] = tenant
        params[f"limit_{n}"] = shares[tenant]
    cursor.execute(_branches("fair_take", len(tenants), levels), params)
    rows = list(cursor.fetchall())
    if rows:
        ids = [row[0] for row in rows]
        cursor.execute(expand(QUERIES["claim_mark_running"], len(ids), 1, marker="ids"), [worker_id, *ids])
        # The rows are locked by our SELECT ... FOR UPDATE, so every one of them must change.
        if cursor.rowcount != len(ids):
            raise RuntimeError(f"claim marked {cursor.rowcount} of {len(ids)} locked rows")
    return rows


def claim_fair_share(*, worker_id: str, limit: int, lookahead_seconds: float, cursor: TenantCursor) -> list[ClaimedJob]:
    """Claim up to `limit` due jobs, the slots shared among the tenants that have due jobs.

    The empty poll stays the per-priority probe. Then (no locks) the walk finds tenants
    with due jobs from `cursor` round; then one transaction: the capped tenants' limit
    rows are locked and their running jobs counted, `share_slots` splits the slots, one
    statement takes every tenant's share, and slots a tenant could not use go round
    again (at most TAKE_ROUNDS takes). Jobs come back interleaved across tenants.
    """
    if limit <= 0:
        return []
    # Read outside the transaction, so it can be stale: a level emptied meanwhile yields no rows
    # (SKIP LOCKED decides), a level that became due meanwhile is claimed by the next poll.
    levels = due_priorities(lookahead_seconds=lookahead_seconds)
    if not levels:
        return []
    start = cursor.after
    walked, due = _walk_due_tenants(start=start, need=limit, levels=levels, lookahead_seconds=lookahead_seconds)
    if not due:
        cursor.after = walked[-1] if walked else start
        return []
    taken: dict[str, list[tuple[Any, ...]]] = {tenant: [] for tenant in due}
    with transaction.atomic(durable=True), connection.cursor() as db:
        # Lock first, count second: another executor's claim for these tenants has then
        # committed (and its jobs are counted as running) or waits until ours commits.
        caps = limits.max_running_jobs(due, lock=True)
        running = _running_counts(db, sorted(caps)) if caps else {}
        headroom = {tenant: max(0, cap - running.get(tenant, 0)) for tenant, cap in caps.items()}
        first_shares = share_slots(limit, due, headroom)
        cursor.after = cursor_after(start, walked, first_shares, headroom)
        shares = {tenant: share for tenant, share in first_shares.items() if share > 0}
        left = limit
        for _ in range(TAKE_ROUNDS):
            if not shares:
                break
            rows = _take(db, worker_id=worker_id, shares=shares, levels=levels, lookahead_seconds=lookahead_seconds)
            got: dict[str, int] = {}
            for row in rows:
                taken[row[1]].append(row)
                got[row[1]] = got.get(row[1], 0) + 1
            left -= len(rows)
            if left <= 0:
                break
            shares = next_round(left, shares, got, headroom)
            headroom = {tenant: room - got.get(tenant, 0) for tenant, room in headroom.items()}
    return [_job_from_row(row) for row in interleave([taken[tenant] for tenant in due])]
