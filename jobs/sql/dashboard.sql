-- The queue dashboard's reads (jobs/queue/dashboard.py): one page refresh runs each once.
-- Every read is bounded by an index range and a cap, never a whole-table count, so
-- a refresh every few seconds stays cheap with a million jobs in the table (figures:
-- `python -m bench.dashboard`, README "Support staff"). No locks: plain reads under
-- READ COMMITTED. Ages come from the database clock (NOW(3)), never the web server's.

-- name: dashboard_status_counts
-- Jobs per status, each the one status_count (jobs/sql/figures.sql).
SELECT 'pending' AS status, {status_count:pending}
UNION ALL
SELECT 'running', {status_count:running}
UNION ALL
SELECT 'succeeded', {status_count:succeeded}
UNION ALL
SELECT 'dead', {status_count:dead}
UNION ALL
SELECT 'cancelled', {status_count:cancelled}
UNION ALL
SELECT 'skipped', {status_count:skipped};

-- name: dashboard_due_level
-- A template, one branch per priority level (jobs/queue/dashboard.py joins them by UNION ALL):
-- the level's pending jobs due now, counted up to `cap`, and its oldest pending due time.
-- Both read jobs_claim_idx (pending_priority, next_attempt_at; pending_priority is the priority
-- of a pending job, NULL otherwise: jobs.models.Job): the count as one range that ends at
-- NOW(3), so future jobs are never read (one range over every level, or a bare
-- `status = 'pending'`, made MariaDB read the whole pending prefix: 150,000 entries, 240 ms
-- measured with a million jobs); the oldest as one index dive ("Select tables optimized away").
-- {priority} is the branch's level.
SELECT {priority} AS priority,
       (SELECT COUNT(*) FROM (
            SELECT 1 FROM jobs
            WHERE pending_priority = {priority} AND next_attempt_at <= NOW(3)
            LIMIT %(cap)s
        ) AS c) AS due,
       (SELECT MIN(next_attempt_at) FROM jobs WHERE pending_priority = {priority}) AS oldest,
       NOW(3) AS db_now

-- name: dashboard_leases
-- Who holds leases: running jobs per worker, over at most `scan_rows` running jobs (the
-- executors' slots bound them anyway). jobs_archiver_idx (status, finished_at) gives the
-- range of running jobs; their leases, worker_id and started_at come from the rows (one lookup
-- each), sorted by lease. The index is forced: MariaDB 10.11 may read the table in lease order.
SELECT r.worker_id, COUNT(*) AS held, SUM(r.lease_expires_at < NOW(3)) AS expired,
       MIN(r.lease_expires_at) AS next_expiry, MAX(r.started_at) AS last_claim,
       SUM(COUNT(*)) OVER () AS scanned
FROM (
    SELECT worker_id, lease_expires_at, started_at
    FROM jobs FORCE INDEX (jobs_archiver_idx)
    WHERE status = 'running'
    ORDER BY lease_expires_at
    LIMIT %(scan_rows)s
) AS r
GROUP BY r.worker_id
ORDER BY held DESC, r.worker_id
LIMIT %(workers)s;

-- name: dashboard_finished_minute
-- A template, one branch per (minute, status), joined by UNION ALL in jobs/queue/dashboard.py:
-- the jobs finished in that minute (minutes ago; 0 = the last 60 s), counted up to `cap`
-- along jobs_archiver_idx (status, finished_at), index only, newest first. When the cap is
-- reached, `span_us` (from the oldest counted to the minute's end) lets the caller estimate
-- the minute's rate. Counting every row instead (one GROUP BY over the window) read
-- 225,000 entries at 15,000 jobs a minute: 1 s measured, too slow for a page that refreshes.
-- {minute} is the branch's minutes ago; {status} 'succeeded' or 'dead'.
SELECT {minute} AS minutes_ago, '{status}' AS status, COUNT(*) AS counted,
       TIMESTAMPDIFF(MICROSECOND, MIN(f.finished_at), NOW(3) - INTERVAL {minute} MINUTE) AS span_us
FROM (
    SELECT finished_at
    FROM jobs
    WHERE status = '{status}'
      AND finished_at > NOW(3) - INTERVAL ({minute} + 1) MINUTE
      AND finished_at <= NOW(3) - INTERVAL {minute} MINUTE
    ORDER BY finished_at DESC
    LIMIT %(cap)s
) AS f

-- name: dashboard_lateness_minute
-- A template, one branch per (minute, status), joined by UNION ALL in jobs/queue/dashboard.py:
-- the newest `sample` jobs finished in that minute, read backwards along jobs_archiver_idx
-- (status, finished_at) so only the sampled rows are looked up. Lateness is how long after
-- its due time the job's last attempt was claimed (started_at - next_attempt_at, never
-- negative: a job claimed ahead waits on its timer and fires on its second).
-- {minute} is the branch's minutes ago; {status} 'succeeded' or 'dead'.
SELECT {minute} AS minutes_ago,
       GREATEST(0, TIMESTAMPDIFF(MICROSECOND, next_attempt_at, started_at)) DIV 1000 AS late_ms
FROM jobs
WHERE status = '{status}'
  AND finished_at > NOW(3) - INTERVAL ({minute} + 1) MINUTE
  AND finished_at <= NOW(3) - INTERVAL {minute} MINUTE
  AND started_at IS NOT NULL
ORDER BY finished_at DESC
LIMIT %(sample)s;

-- name: dashboard_dead_by_tenant_hour
-- Dead jobs per tenant and hour (hours ago, 0 = this hour) over newest_dead_jobs
-- (jobs/sql/figures.sql) of the last `hours` hours. `scanned` tells when the scan was capped.
SELECT s.tenant_id, TIMESTAMPDIFF(SECOND, s.finished_at, NOW(3)) DIV 3600 AS hours_ago, COUNT(*) AS dead,
       SUM(COUNT(*)) OVER () AS scanned
FROM ({newest_dead_jobs}) AS s
GROUP BY s.tenant_id, hours_ago;

-- name: dashboard_paused_tenants
-- The paused tenants (tasks.pausing), longest paused first, at most `tenants` of them, and how
-- many are paused (up to `cap`). tenant_limits_paused_idx (paused, tenant_id) reads only the
-- paused rows (a few, during an incident), never the other tenants'.
SELECT l.tenant_id, l.paused_at, l.paused_by, l.paused_reason,
       (SELECT COUNT(*) FROM (SELECT 1 FROM tenant_limits WHERE paused = 1 LIMIT %(cap)s) AS c) AS paused
FROM tenant_limits AS l
WHERE l.paused = 1
ORDER BY l.paused_at, l.tenant_id
LIMIT %(tenants)s;

-- name: dashboard_tenant_pending
-- A template, one branch per paused tenant shown (jobs/queue/dashboard.py joins them by UNION ALL):
-- the tenant's pending jobs, held while it is paused, counted up to `cap` along jobs_dlq_idx
-- (tenant_id, status), index only. {n} is the branch's number.
SELECT %(tenant_{n})s AS tenant_id,
       (SELECT COUNT(*) FROM (
            SELECT 1 FROM jobs WHERE tenant_id = %(tenant_{n})s AND status = 'pending' LIMIT %(cap)s
        ) AS c) AS pending
