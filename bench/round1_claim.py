"""The round-1 claim (priority first across all tenants), kept only for the fairness bench's comparison.

The product claims with `jobs.queue.claim_due` (the fair share). This is the seed's
`ORDER BY priority, next_attempt_at LIMIT n FOR UPDATE SKIP LOCKED`, read one priority
level at a time, and marks its rows with the product's `claim_mark_running`.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from jobs.queue import ClaimedJob, due_priorities
from jobs.queue.claims import LEASE_SLACK_SECONDS, claimed_from_row
from jobs.queue.statements import STATEMENTS

# One priority level's due jobs, oldest first; a paused tenant's are passed over. SKIP LOCKED
# passes over rows another claim is taking; under READ COMMITTED it takes no gap locks.
CLAIM_SELECT = """
SELECT id, tenant_id, task_id, scheduled_at, attempt, fence, max_attempts, next_attempt_at,
       timeout_seconds, backoff_base_seconds, request_method, request_url,
       request_headers, request_body, secret_ref, NOW(3) AS db_now
FROM jobs
WHERE pending_priority = %(priority)s
  AND next_attempt_at <= NOW(3) + INTERVAL %(lookahead_seconds)s SECOND
  AND NOT EXISTS (SELECT 1 FROM tenant_limits AS l WHERE l.tenant_id = jobs.tenant_id AND l.paused = 1)
ORDER BY next_attempt_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
"""


def claim_priority_first(*, worker_id: str, limit: int, lookahead_seconds: float) -> list[ClaimedJob]:
    """Claim up to `limit` jobs due within `lookahead_seconds`, priority 0 first, across all tenants."""
    if limit <= 0:
        return []
    levels = due_priorities(lookahead_seconds=lookahead_seconds)
    if not levels:
        return []
    rows: list[tuple[Any, ...]] = []
    with transaction.atomic(durable=True), connection.cursor() as cursor:
        for priority in levels:
            params = {"priority": priority, "lookahead_seconds": lookahead_seconds, "limit": limit - len(rows)}
            cursor.execute(CLAIM_SELECT, params)
            rows.extend(cursor.fetchall())
            if len(rows) >= limit:
                break
        if not rows:
            return []
        ids = [(row[0],) for row in rows]
        marking = {"worker_id": worker_id, "lease_slack_seconds": LEASE_SLACK_SECONDS}
        cursor.execute(*STATEMENTS["claim_mark_running"].bind(marking, ids))
        if cursor.rowcount != len(rows):
            raise RuntimeError(f"claim marked {cursor.rowcount} of {len(rows)} locked rows")
    return [claimed_from_row(row) for row in rows]
