-- The queue's gauges for /metrics (workers/queue_stats.py). Run by one elected replica
-- every interval, never per request: each read is bounded by an index and a cap.

-- name: stats_lock
-- Election: the replica whose connection holds this lock reports; the others do not.
-- Waiting 0 s never blocks a loop. A replica that dies or reconnects drops the lock
-- with its session, and the next replica to ask takes over.
-- Parameter: the lock name.
SELECT IF(IS_USED_LOCK(%(name)s) = CONNECTION_ID(), 1, GET_LOCK(%(name)s, 0));

-- name: stats_queue
-- Every figure of one report in ONE statement, so all come from one read view (READ COMMITTED
-- takes a snapshot per statement): two statements let a job die between them, and a scrape
-- then showed it among the dead by tenant but not in the dead count (a flaky test: 0.0 == 1).
-- One row per figure (tenant_id and scanned NULL). Each status count is the one status_count
-- (jobs/sql/figures.sql); the oldest due pending job is 10 index dives (the claim index's loose
-- scan, one per priority: its pending_priority is NULL for every job not pending); expired
-- leases read the running jobs' range of jobs_archiver_idx (the executors' slots bound it) and
-- each one's lease. Then one row per tenant of dead_by_tenant (jobs/sql/figures.sql: the `tenants` with most
-- dead jobs in the newest `scan_rows` dead jobs; `tenants` = 0 reads none: tenant ids are off
-- the metrics unless METRICS_TENANT_LABELS), `scanned` the rows read in all, so the rest can
-- be reported as "other".
SELECT 'pending' AS figure, NULL AS tenant_id, {status_count:pending} AS value, NULL AS scanned
UNION ALL
SELECT 'running', NULL, {status_count:running}, NULL
UNION ALL
SELECT 'succeeded', NULL, {status_count:succeeded}, NULL
UNION ALL
SELECT 'dead', NULL, {status_count:dead}, NULL
UNION ALL
SELECT 'expired_leases', NULL, (
    SELECT COUNT(*) FROM (
        SELECT 1 FROM jobs FORCE INDEX (jobs_archiver_idx)
        WHERE status = 'running' AND lease_expires_at < NOW(3) LIMIT %(cap)s
    ) AS c
), NULL
UNION ALL
SELECT 'oldest_due_pending_ms', NULL, (
    SELECT GREATEST(0, COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(p.oldest), NOW(3)) DIV 1000, 0))
    FROM (SELECT MIN(next_attempt_at) AS oldest FROM jobs WHERE pending_priority IS NOT NULL GROUP BY pending_priority) AS p
), NULL
UNION ALL
SELECT 'dead_by_tenant', t.tenant_id, t.dead, t.scanned
FROM ({dead_by_tenant}) AS t;
