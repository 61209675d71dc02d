"""The claim: pending → running for up to `limit` due jobs, in one short transaction.

Raw SQL (jobs/sql/executor.sql) on the calling thread's connection, which runs
READ COMMITTED (settings): under REPEATABLE READ the claim's gap locks blocked
the scheduler's inserts for seconds. The probe and the walk's first chunk, hints
that the locking reads check, run before the transaction as dirty reads
(`_read_uncommitted_next`). The transaction commits before the caller makes any
HTTP call, so a row lock lasts milliseconds and a job is never fired without a
committed claim.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from jobs.fairness import TenantCursor, cursor_after, interleave, next_round, share_slots
from jobs.queue import pacing
from jobs.queue.deadlocks import retry_deadlocks
from jobs.queue.statements import QUERIES, STATEMENTS
from tasks import limits

# The fair claim's walk over tenants: chunks of WALK_CHUNK_MIN..WALK_CHUNK_MAX tenants, at most
# WALK_MAX_TENANTS tenants with pending jobs per claim (the next claim starts where this one
# stopped); at most TAKE_ROUNDS takes (slots a tenant could not use go round again).
WALK_CHUNK_MIN = 64
WALK_CHUNK_MAX = 1000
WALK_MAX_TENANTS = 5000
TAKE_ROUNDS = 3

# A lease runs to the job's time (or the claim's, if later) + its timeout + this (claim_mark_running).
# The executor starts a call at most `LEASE_SLACK_SECONDS - 20` after that time, so the call ends
# 20 s before the lease does, for its result to be written (workers.executor.call_slots).
LEASE_SLACK_SECONDS = 30

logger = logging.getLogger(__name__)

_CURSOR = TenantCursor()  # this process's round-robin position (the claim runs on one thread)


@dataclass(slots=True)  # not frozen: its __init__ would set each field through object.__setattr__ (2x, per job)
class ClaimedJob:
    """What firing a claimed job needs: the request snapshot and the fence (not the job record:
    no result yet, and the headers, body and secret the history never keeps). Never changed once built."""

    id: uuid.UUID
    tenant_id: str
    task_id: uuid.UUID
    scheduled_at: datetime
    attempt: int  # after the claim's +1: the calls made with this one (X-Attempt)
    fence: int  # after the claim's +1: the fencing token of this holding (every guarded write carries it)
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
    # The request as read (URL, headers' JSON, body), in bytes of memory: about what holding the job costs.
    request_bytes: int = 0


@functools.lru_cache(maxsize=4096)
def _utc(value: datetime) -> datetime:
    """`value` (naive means UTC) as an aware datetime; cached: a claim's jobs share their seconds (cron),
    and a cache hit costs a fifth of `replace(tzinfo=...)`."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def claimed_from_row(row: tuple[Any, ...]) -> ClaimedJob:
    """A claim row (`fair_take`, `fair_take_first`: their column order) as the job this worker now holds."""
    (
        job_id,
        tenant_id,
        task_id,
        scheduled_at,
        attempt,
        fence,
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
    return ClaimedJob(
        id=uuid.UUID(bytes=bytes(job_id)),
        tenant_id=tenant_id,
        task_id=uuid.UUID(bytes=bytes(task_id)),
        scheduled_at=_utc(scheduled_at),
        attempt=attempt + 1,  # locked since the SELECT, so this is what the UPDATE's attempt + 1 wrote
        fence=fence + 1,  # and its fence + 1
        max_attempts=max_attempts,
        next_attempt_at=_utc(next_attempt_at),
        timeout_seconds=timeout,
        backoff_base_seconds=backoff_base,
        method=method,
        url=url,
        headers=json.loads(headers) if isinstance(headers, str | bytes) and headers else (headers or {}),
        body=body or "",
        secret_ref=secret_ref or None,
        request_bytes=sys.getsizeof(url) + sys.getsizeof(headers) + sys.getsizeof(body),
        # Both from the same row of the driver, so both naive (or both aware): no zone needed to subtract.
        due_in=(next_attempt_at - db_now).total_seconds(),
    )


def _read_uncommitted_next(cursor: Any) -> None:
    """Let the cursor's next statement read uncommitted rows: the probe's and the walk's, which run
    before the claim's transaction, each its own (autocommit), and are only hints.

    Under READ COMMITTED their index reads checked each entry's visibility against the rows the
    other executors' claims and result writes were changing meanwhile (a clustered-index lookup
    per entry): in `make bench` the walk cost the server 35 us per job, 5 times its cost with one
    executor, and 11 this way. A dirty hint is harmless: the take locks what it takes (SKIP LOCKED),
    so a job another claim is taking, or the scheduler is still inserting, is passed over there; a
    job another claim is marking running is not offered a share here. Inside an atomic block (a
    caller's transaction, tests) the level cannot change, and the reads stay as they were. Behind
    vtgate (DATABASE_VITESS) neither: vtgate turns the statement into SET transaction_isolation,
    which MariaDB does not know; the hints read committed rows there.
    """
    if not connection.in_atomic_block and not settings.DATABASE_VITESS:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")  # the next transaction only


def due_priorities(*, lookahead_seconds: float) -> list[int]:
    """Priority levels that have a job due within the lookahead (no locks; a dirty read)."""
    with connection.cursor() as cursor:
        _read_uncommitted_next(cursor)
        cursor.execute(*STATEMENTS["claim_due_priorities"].bind({"lookahead_seconds": lookahead_seconds}))
        return sorted(row[0] for row in cursor.fetchall())


def claim_due(
    *, worker_id: str, limit: int, lookahead_seconds: float, cursor: TenantCursor | None = None
) -> list[ClaimedJob]:
    """Claim up to `limit` jobs due within `lookahead_seconds`, the slots shared among the tenants
    with due jobs (`claim_fair_share`).

    `cursor` is the round-robin position of this process (a module-wide one by default).
    """
    if limit <= 0:
        return []
    return claim_fair_share(
        worker_id=worker_id, limit=limit, lookahead_seconds=lookahead_seconds, cursor=cursor or _CURSOR
    )


# --- the fair claim -------------------------------------------------------------


def _statement(name: str, levels: list[int], **markers: str) -> str:
    """A fair-claim statement with its markers filled, without comments or indentation (it is
    sent on every claim, some of it once per tenant). The levels are the probe's integers."""
    lines = (line.strip() for line in QUERIES[name].splitlines() if not line.lstrip().startswith("--"))
    query = " ".join(lines).replace("{levels}", ", ".join(str(int(level)) for level in levels))
    for marker, text in markers.items():
        query = query.replace("{" + marker + "}", text)
    return query


class _Walk:
    """The tenants with pending jobs after `start` in tenant order, then from the first up to `start`."""

    def __init__(self, db: Any, *, start: str, levels: list[int], lookahead_seconds: float) -> None:
        self.db = db
        self.levels = levels
        self.lookahead_seconds = lookahead_seconds
        self.passes: list[str | None] = [None, start] if start else [None]  # each pass's upper bound
        self.after = start
        self.walked: list[str] = []
        self.paced: set[str] = set()  # tenants with rate-limit buckets (jobs.queue.pacing)

    def next_chunk(self, size: int, *, dirty: bool = False) -> list[tuple[str, Any]]:
        """Up to `size` more (tenant, key of its first due job or None), across the wrap; [] once walked round.

        The key is (tenant_id, priority, next_attempt_at, id): what fair_take_first locks by.
        `dirty`: read uncommitted rows (outside the claim's transaction: `_read_uncommitted_next`).
        """
        chunk: list[tuple[str, Any]] = []
        while self.passes:
            want = min(size - len(chunk), WALK_MAX_TENANTS - len(self.walked))
            if want <= 0:
                break
            until = self.passes[0]
            bound = "" if until is None else "AND pending_tenant <= %(until)s"
            if dirty:
                _read_uncommitted_next(self.db)
            self.db.execute(
                _statement("fair_walk", self.levels, bound=bound),
                {"after": self.after, "until": until, "limit": want, "lookahead_seconds": self.lookahead_seconds},
            )
            rows = []
            for tenant, priority, next_attempt_at, job_id, paced in self.db.fetchall():
                rows.append((tenant, None if job_id is None else (tenant, priority, next_attempt_at, job_id)))
                if paced:
                    self.paced.add(tenant)
            self.walked.extend(tenant for tenant, _ in rows)
            chunk.extend(rows)
            if rows:
                self.after = rows[-1][0]
            if len(rows) < want:  # this pass reached its end: the next one starts from the first tenant
                self.passes.pop(0)
                self.after = ""
        return chunk


def _chunk_size(remaining: int) -> int:
    return max(WALK_CHUNK_MIN, min(WALK_CHUNK_MAX, remaining))


def _headroom(db: Any, tenants: list[str]) -> dict[str, int]:
    """Cap minus running jobs of each capped tenant, counted under the tenants' locked limit rows.

    A paused tenant's cap is 0 (tasks.limits): no share, its jobs stay pending until it is resumed.
    """
    # Lock first, count second: another executor's claim for these tenants has then committed
    # (its jobs are counted as running) or waits until ours commits. An uncapped tenant's row is
    # not locked: a pause committed while this claim runs (milliseconds) counts from the next claim.
    caps = limits.max_running_jobs(tenants, lock=True)
    if not caps:
        return {}
    db.execute(*STATEMENTS["fair_running_counts"].bind(rows=[(tenant,) for tenant in sorted(caps)]))
    running = dict(db.fetchall())
    return {tenant: max(0, cap - running.get(tenant, 0)) for tenant, cap in caps.items()}


def _take(
    db: Any,
    *,
    worker_id: str,
    shares: dict[str, int],
    first_due: dict[str, Any],
    levels: list[int],
    lookahead_seconds: float,
    paced: set[str],
) -> list[tuple[Any, ...]]:
    """Lock each tenant's share of due jobs and mark them running; return the rows.

    A share of one with a known first due job is taken by its key (one statement for all of them),
    larger shares by one UNION ALL branch per tenant (at most free / 2 tenants). The `paced`
    tenants' rows pass their origins' rate limits first (`pacing.pace`): those held back stay
    pending, locked by this transaction until it commits, and are not returned.
    """
    by_id = [first_due[tenant] for tenant, share in shares.items() if share == 1 and tenant in first_due]
    by_branch = [tenant for tenant, share in shares.items() if share > 1 or (share == 1 and tenant not in first_due)]
    rows: list[tuple[Any, ...]] = []
    if by_id:
        values = {"lookahead_seconds": lookahead_seconds}
        columns = ("tenant_id", "priority", "next_attempt_at", "id")
        # Rendered with our literals (statements.literal): a key per tenant, its time and id quoted cheaply.
        db.execute(STATEMENTS["fair_take_first"].render(connection.connection, values, by_id, columns=columns))
        rows.extend(db.fetchall())
    if by_branch:
        branch = _statement("fair_take", levels)
        query = "\nUNION ALL\n".join(f"({branch.replace('{n}', str(n))})" for n in range(len(by_branch)))
        params: dict[str, Any] = {"lookahead_seconds": lookahead_seconds}
        for n, tenant in enumerate(by_branch):
            params[f"tenant_{n}"] = tenant
            params[f"limit_{n}"] = shares[tenant]
        db.execute(query, params)
        rows.extend(db.fetchall())
    if paced and rows:
        rows = pacing.pace(db, rows, paced=paced)
    if rows:
        marked = [(row[0],) for row in rows]
        db.execute(
            STATEMENTS["claim_mark_running"].render(
                connection.connection, {"worker_id": worker_id, "lease_slack_seconds": LEASE_SLACK_SECONDS}, marked
            )
        )
        # The rows are locked by our SELECT ... FOR UPDATE, so every one of them must change.
        if db.rowcount != len(rows):
            raise RuntimeError(f"claim marked {db.rowcount} of {len(rows)} locked rows")
    return rows


def claim_fair_share(*, worker_id: str, limit: int, lookahead_seconds: float, cursor: TenantCursor) -> list[ClaimedJob]:
    """Claim up to `limit` due jobs, the slots shared among the tenants that have due jobs.

    The empty poll stays the per-priority probe. Then one transaction: walk the tenants
    from `cursor` round, a chunk at a time (each with its first due job); lock the capped
    ones' limit rows and count their running jobs; `share_slots` splits the remaining
    slots among the chunk's tenants with due jobs and their shares are taken; the next
    chunk gets what is left. Once every tenant was walked, slots still free go round
    again among the tenants that filled their share (at most TAKE_ROUNDS takes in all).
    Jobs come back interleaved across tenants.
    """
    if limit <= 0:
        return []
    # Read outside the transaction, so it can be stale: a level emptied meanwhile yields no rows
    # (SKIP LOCKED decides), a level that became due meanwhile is claimed by the next poll.
    levels = due_priorities(lookahead_seconds=lookahead_seconds)
    if not levels:
        return []
    # A deadlock victim (two claims meeting on rows one reached through its index and the other's
    # update moves in that index) is rolled back whole: nothing was committed or fired.
    return retry_deadlocks(
        lambda: _claim_fair_share_once(
            worker_id=worker_id, limit=limit, lookahead_seconds=lookahead_seconds, cursor=cursor, levels=levels
        ),
        what="claim",
    )


def _claim_fair_share_once(
    *, worker_id: str, limit: int, lookahead_seconds: float, cursor: TenantCursor, levels: list[int]
) -> list[ClaimedJob]:
    start = cursor.after
    taken: dict[str, list[tuple[Any, ...]]] = {}
    shares: dict[str, int] = {}  # every due tenant's first share, in walk order
    headroom: dict[str, int] = {}
    by_key_missed: set[str] = set()
    remaining = limit
    with connection.cursor() as db:
        walk = _Walk(db, start=start, levels=levels, lookahead_seconds=lookahead_seconds)
        # The first chunk (up to `_chunk_size(limit)` tenants: every one in most claims) is read
        # before the transaction, dirty (`_read_uncommitted_next`); any further ones inside it.
        chunk = walk.next_chunk(_chunk_size(remaining), dirty=True)
        with transaction.atomic(durable=True):
            takes = 0
            while remaining > 0 and chunk:
                first_due = {tenant: job_id for tenant, job_id in chunk if job_id is not None}
                due = [tenant for tenant, _ in chunk if tenant in first_due]
                if due:
                    headroom.update(_headroom(db, due))
                    chunk_shares = share_slots(remaining, due, headroom)
                    shares.update(chunk_shares)
                    wanted = {tenant: share for tenant, share in chunk_shares.items() if share > 0}
                    if wanted:
                        for row in _take(
                            db,
                            worker_id=worker_id,
                            shares=wanted,
                            first_due=first_due,
                            levels=levels,
                            lookahead_seconds=lookahead_seconds,
                            paced=walk.paced,
                        ):
                            taken.setdefault(row[1], []).append(row)
                            remaining -= 1
                        takes += 1
                        # Taken by the walk's key and got nothing: that row was locked, or (a dirty
                        # key) not yet committed; the tenant may have more due jobs behind it.
                        by_key_missed.update(
                            tenant
                            for tenant, share in wanted.items()
                            if share == 1 and tenant in first_due and tenant not in taken
                        )
                chunk = walk.next_chunk(_chunk_size(remaining)) if remaining > 0 else []
            # Every tenant walked and slots left: more for the tenants that filled their share.
            last = {tenant: share for tenant, share in shares.items() if share > 0}
            got = {tenant: len(rows) for tenant, rows in taken.items()}
            room = {tenant: room - got.get(tenant, 0) for tenant, room in headroom.items()}
            while (
                remaining > 0
                and takes < TAKE_ROUNDS
                and (more := next_round(remaining, last, got, room, unfinished=by_key_missed))
            ):
                rows = _take(
                    db,
                    worker_id=worker_id,
                    shares=more,
                    first_due={},
                    levels=levels,
                    lookahead_seconds=lookahead_seconds,
                    paced=walk.paced,
                )
                got = {}
                for row in rows:
                    taken.setdefault(row[1], []).append(row)
                    got[row[1]] = got.get(row[1], 0) + 1
                remaining -= len(rows)
                room = {tenant: room - got.get(tenant, 0) for tenant, room in room.items()}
                last, takes, by_key_missed = more, takes + 1, set()  # a branch reads past locked rows
            cursor.after = cursor_after(start, walk.walked, shares, headroom)
    return [claimed_from_row(row) for row in interleave([taken[tenant] for tenant in shares if tenant in taken])]


def release_claims(*, worker_id: str, jobs: list[ClaimedJob]) -> int:
    """Give back claimed jobs that were never called; returns how many were still ours.

    Pending again, due as they were, with the claim's attempt undone and the fence grown once more
    (`claim_release`): the executor that held them has dropped them, and whichever executor claims
    them next fires them. One held elsewhere now (the reconciler took it back when its lease
    expired) is left as it is. Safe to send again: a repeat carries a fence the row has outgrown.
    """
    if not jobs:
        return 0
    rows = [(job.id.bytes, job.fence, job.attempt) for job in jobs]
    with connection.cursor() as cursor:
        cursor.execute(
            *STATEMENTS["claim_release"].bind({"worker_id": worker_id}, rows, columns=("id", "fence", "attempt"))
        )
        return cursor.rowcount
