-- The queue's gauges for /metrics (workers/queue_stats.py). Run by one elected replica
-- every interval, never per request: each read is bounded by an index and a cap.

-- name: stats_lock
-- Election: the replica whose connection holds this lock reports; the others do not.
-- Waiting 0 s never blocks a loop. A replica that dies or reconnects drops the lock
-- with its session, and the next replica to ask takes over.
-- Parameter: the lock name.
SELECT IF(IS_USED_LOCK(%(name)s) = CONNECTION_ID(), 1, GET_LOCK(%(name)s, 0));

-- name: stats_queue
-- One row per figure. Each status count reads at most `cap` entries of an index whose
-- first column is status (so "at least cap" past it, never a whole-table count); the oldest
-- due pending job is 10 index dives (the claim index's loose scan, one per priority: its
-- pending_priority is NULL for every job not pending); expired leases read the running jobs'
-- range of jobs_archiver_idx (the executors' slots bound it) and each one's lease.
SELECT 'pending' AS figure, (SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = 'pending' LIMIT %(cap)s) AS c)
UNION ALL
SELECT 'running', (SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = 'running' LIMIT %(cap)s) AS c)
UNION ALL
SELECT 'succeeded', (SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = 'succeeded' LIMIT %(cap)s) AS c)
UNION ALL
SELECT 'dead', (SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = 'dead' LIMIT %(cap)s) AS c)
UNION ALL
SELECT 'expired_leases', (
    SELECT COUNT(*) FROM (
        SELECT 1 FROM jobs FORCE INDEX (jobs_archiver_idx)
        WHERE status = 'running' AND lease_expires_at < NOW(3) LIMIT %(cap)s
    ) AS c
)
UNION ALL
SELECT 'oldest_due_pending_ms', (
    SELECT GREATEST(0, COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(p.oldest), NOW(3)) DIV 1000, 0))
    FROM (SELECT MIN(next_attempt_at) AS oldest FROM jobs WHERE pending_priority IS NOT NULL GROUP BY pending_priority) AS p
);

-- name: stats_dead_by_tenant
-- Dead jobs per tenant over the newest `scan` dead jobs (jobs_archiver_idx), the top
-- `tenants` tenants only: the metric's label set stays bounded however many tenants exist.
-- `scanned` is the rows read in all, so the rest can be reported as "other".
SELECT s.tenant_id, COUNT(*) AS dead, SUM(COUNT(*)) OVER () AS scanned
FROM (
    SELECT tenant_id
    FROM jobs
    WHERE status = 'dead'
    ORDER BY finished_at DESC
    LIMIT %(scan)s
) AS s
GROUP BY s.tenant_id
ORDER BY dead DESC, s.tenant_id
LIMIT %(tenants)s;
