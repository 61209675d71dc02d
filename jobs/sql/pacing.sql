-- Rate limits per origin (jobs/queue/pacing.py; ratelimits.pacing holds the rule; docs: how-to/rate-limits.md).
-- origin_buckets is the state every executor shares: one row per (tenant, origin) with a limit,
-- or with a Retry-After block in force. Only the claim (pacing_lock_buckets .. pacing_hold_back,
-- in its own transaction) and the result writer (pacing_block_origins) write it here.

-- name: pacing_lock_buckets
-- The paced tenants' buckets with their limits, locked until the claim commits: another
-- executor's claim for these tenants waits here, then reads what ours granted (the race that
-- would grant one token twice). In (tenant, origin) order through origin_buckets_tenant_origin_uniq,
-- so two claims that lock overlapping sets queue instead of deadlocking. The limit's row is
-- locked too (a joined table in a locking read): the API's create and replace lock the bucket
-- first, then the limit, the same order. A tenant has at most ratelimits.services.MAX_RATE_LIMITS
-- limits, plus the blocks of origins its own tasks call (pruned once they end).
SELECT b.id, b.tenant_id, b.origin, b.tat, b.blocked_until, b.granted, b.first_granted_for,
       b.last_granted_for, b.held_until, l.per_second, l.burst, NOW(3) AS db_now
FROM origin_buckets AS b
LEFT JOIN rate_limits AS l ON l.tenant_id = b.tenant_id AND l.origin = b.origin
WHERE b.tenant_id IN ({ids})
ORDER BY b.tenant_id, b.origin
FOR UPDATE;

-- name: pacing_write_buckets
-- The buckets this claim granted from or held jobs back by, each found by its primary key
-- (locked above). One document [id in hex, tat, granted, first_granted_for, last_granted_for,
-- held_until] per bucket.
UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (
    id CHAR(32) PATH '$[0]', tat DATETIME(6) PATH '$[1]', granted BIGINT PATH '$[2]',
    first_granted_for DATETIME(6) PATH '$[3]', last_granted_for DATETIME(6) PATH '$[4]',
    held_until DATETIME(6) PATH '$[5]'
)) AS r
STRAIGHT_JOIN origin_buckets AS b FORCE INDEX (PRIMARY) ON b.id = UNHEX(r.id)
SET b.tat = r.tat,
    b.granted = r.granted,
    b.first_granted_for = r.first_granted_for,
    b.last_granted_for = r.last_granted_for,
    b.held_until = r.held_until,
    b.updated_at = NOW(6);

-- name: pacing_prune_buckets
-- Buckets of no use any more: no limit (deleted) and no block in force. Locked above.
DELETE FROM origin_buckets WHERE id IN ({ids});

-- name: pacing_hold_back
-- Jobs the limit holds back stay pending and come due again when a token is free: only
-- next_attempt_at moves (never attempt, never the fence: no call was made and no claim
-- taken, so nothing counts as a failure and no fenced write can be confused). The rows are
-- locked by this claim's take (FOR UPDATE SKIP LOCKED), so each one must change. One document
-- [id in hex, back_at] per job, each job by its primary key.
UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (id CHAR(32) PATH '$[0]', back_at DATETIME(6) PATH '$[1]')) AS r
STRAIGHT_JOIN jobs AS j FORCE INDEX (PRIMARY) ON j.id = UNHEX(r.id)
SET j.next_attempt_at = r.back_at,
    j.updated_at = NOW(3)
WHERE j.status = 'pending';

-- name: pacing_block_origins
-- A 429 or 503 with Retry-After: the origin takes no call of this tenant, from any task or
-- executor, until then (a bucket created for it when it has no limit, pruned by the claim
-- once the block ends). A later block never shortens an earlier one. One document
-- [new id in hex, tenant, origin, seconds] per origin; the time is the database's.
INSERT INTO origin_buckets (id, tenant_id, origin, blocked_until, granted, updated_at)
SELECT UNHEX(r.id), r.tenant_id, r.origin, NOW(3) + INTERVAL r.seconds SECOND, 0, NOW(6)
FROM JSON_TABLE({json}, '$[*]' COLUMNS (
    id CHAR(32) PATH '$[0]', tenant_id VARCHAR(64) PATH '$[1]', origin VARCHAR(300) PATH '$[2]',
    seconds BIGINT PATH '$[3]'
)) AS r
ON DUPLICATE KEY UPDATE
    blocked_until = GREATEST(COALESCE(origin_buckets.blocked_until, VALUES(blocked_until)), VALUES(blocked_until)),
    updated_at = NOW(6);
