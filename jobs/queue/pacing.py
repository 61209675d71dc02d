"""Rate limits per origin, kept by the claim: grant a call, or hold the job back until a token is free.

Runs inside the claim's transaction (jobs.queue.claims._take), between the take's
locking SELECT and the mark as running, and only for the tenants the walk found
with bucket rows (`paced`): a tenant without any costs the claim nothing beyond the
walk's EXISTS. The rule is ratelimits.pacing's; the state is origin_buckets,
locked here so every executor grants from the same bucket (jobs/sql/pacing.sql).
Also the result writer's `block_origins`: a Retry-After holds back the origin for
every task of the tenant.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from domain.ids import new_id
from jobs.queue.statements import STATEMENTS
from ratelimits.origins import origin_of_url
from ratelimits.pacing import Bucket

logger = logging.getLogger(__name__)

# The claim's row (fair_take, fair_take_first): where its id, tenant, next_attempt_at, URL and NOW(3) are.
_ID, _TENANT, _NEXT_ATTEMPT_AT, _URL, _DB_NOW = 0, 1, 7, 11, 15


def _seconds(value: datetime) -> float:
    """A naive (UTC) or aware database time as seconds since the epoch."""
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def _time(seconds: float | None) -> datetime | None:
    """Seconds since the epoch as the naive UTC time the statements write."""
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class OriginBlock:
    """An origin asked this tenant to come back in `seconds` (429 or 503 with Retry-After)."""

    tenant_id: str
    origin: str
    seconds: int


def _lock_buckets(db: Any, tenants: list[str]) -> tuple[dict[tuple[str, str], tuple[bytes, Bucket]], float]:
    """The tenants' buckets, locked, and the database's time; buckets of no use any more are deleted."""
    db.execute(*STATEMENTS["pacing_lock_buckets"].bind(rows=[(tenant,) for tenant in tenants]))
    buckets: dict[tuple[str, str], tuple[bytes, Bucket]] = {}
    stale: list[tuple[bytes]] = []
    now: float | None = None
    for row in db.fetchall():
        bucket_id, tenant, origin, tat, blocked, granted, first, last, held_until, per_second, burst, db_now = row
        now = _seconds(db_now)
        blocked_until = None if blocked is None else _seconds(blocked)
        if per_second is None and (blocked_until is None or blocked_until <= now):
            stale.append((bytes(bucket_id),))  # its limit was deleted and no block is in force
            continue
        bucket = Bucket(
            per_second=per_second,
            burst=burst or 1,
            tat=None if tat is None else _seconds(tat),
            blocked_until=blocked_until,
            granted=granted,
            first_granted_for=None if first is None else _seconds(first),
            last_granted_for=None if last is None else _seconds(last),
            held_until=None if held_until is None else _seconds(held_until),
        )
        buckets[(tenant, origin)] = (bytes(bucket_id), bucket)
    if stale:
        db.execute(*STATEMENTS["pacing_prune_buckets"].bind(rows=stale))
    return buckets, now or 0.0


def pace(db: Any, rows: list[tuple[Any, ...]], *, paced: set[str]) -> list[tuple[Any, ...]]:
    """The taken rows that may call now; the paced ones over their origin's limit are held back.

    Called with the rows locked (the take's FOR UPDATE) and before they are marked running, in
    the claim's transaction: a held-back job stays pending, due again when its origin has a
    token (only next_attempt_at moves), and is never lost. Rows are decided in the take's order
    (priority, then time), each wanted at its own time or now, whichever is later.
    """
    tenants = sorted({row[_TENANT] for row in rows if row[_TENANT] in paced})
    if not tenants:
        return rows
    buckets, _ = _lock_buckets(db, tenants)
    if not buckets:
        return rows
    kept: list[tuple[Any, ...]] = []
    held: list[tuple[bytes, datetime | None]] = []
    for row in rows:
        entry = buckets.get((row[_TENANT], origin_of_url(row[_URL]) or "")) if row[_TENANT] in paced else None
        if entry is None:
            kept.append(row)
            continue
        wanted_at = max(_seconds(row[_NEXT_ATTEMPT_AT]), _seconds(row[_DB_NOW]))
        back = entry[1].admit(wanted_at)
        if back is None:
            kept.append(row)
        else:
            held.append((bytes(row[_ID]), _time(back)))
    changed = [
        (
            bucket_id,
            _time(b.tat),
            b.granted,
            _time(b.first_granted_for),
            _time(b.last_granted_for),
            _time(b.held_until),
        )
        for bucket_id, b in buckets.values()
        if b.changed
    ]
    if changed:
        columns = ("id", "tat", "granted", "first_granted_for", "last_granted_for", "held_until")
        db.execute(*STATEMENTS["pacing_write_buckets"].bind(rows=changed, columns=columns))
    if held:
        db.execute(*STATEMENTS["pacing_hold_back"].bind(rows=held, columns=("id", "back_at")))
        # The rows are locked by this claim's take and pending, so every one of them must change.
        if db.rowcount != len(held):
            raise RuntimeError(f"held back {db.rowcount} of {len(held)} locked rows")
        logger.debug("jobs held back by rate limits", extra={"event": "rate_limited", "jobs": len(held)})
    return kept


def block_origins(*, blocks: Iterable[OriginBlock]) -> int:
    """Hold back each origin for its tenant until its Retry-After has passed (one statement); how many."""
    latest: dict[tuple[str, str], int] = {}
    for block in blocks:
        key = (block.tenant_id, block.origin)
        latest[key] = max(latest.get(key, 0), block.seconds)
    if not latest:
        return 0
    rows = [(new_id().bytes, tenant, origin, seconds) for (tenant, origin), seconds in sorted(latest.items())]
    with connection.cursor() as cursor:
        cursor.execute(
            *STATEMENTS["pacing_block_origins"].bind(rows=rows, columns=("id", "tenant_id", "origin", "seconds"))
        )
    logger.info(
        "origins blocked by Retry-After",
        extra={"event": "origin_blocked", "origins": [f"{t} {o} {s}s" for (t, o), s in sorted(latest.items())]},
    )
    return len(latest)
