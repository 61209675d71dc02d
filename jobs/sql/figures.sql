-- The queue's figures that several readers share, each defined once: the console's DLQ summary
-- (jobs.queue.support), the dashboard (jobs/sql/dashboard.sql) and the /metrics gauges
-- (jobs/sql/stats.sql) include them ({name} or {status_count:<status>}, filled by
-- jobs.queue.statements). Bounded by construction: a count stops at a cap, a scan at a row limit.

-- name: status_count
-- A template: the jobs of one {status}, counted up to `cap` (a LIMITed derived table: "at least
-- cap" past it). An index-only range on one status-prefixed index (jobs_archiver_idx (status,
-- finished_at) as chosen by the optimizer; any of them serves).
(SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = '{status}' LIMIT %(cap)s) AS c)

-- name: newest_dead_jobs
-- A template: at most the newest `scan_rows` dead jobs, read backwards along jobs_archiver_idx
-- (status, finished_at), so a huge DLQ is never read whole; `hours` NULL reads any age, else the
-- last `hours` hours (the constant test folds away before the range is planned).
SELECT tenant_id, finished_at
FROM jobs
WHERE status = 'dead'
  AND (%(hours)s IS NULL OR finished_at > NOW(3) - INTERVAL %(hours)s HOUR)
ORDER BY finished_at DESC
LIMIT %(scan_rows)s

-- name: dead_by_tenant
-- Dead jobs per tenant over newest_dead_jobs, the `tenants` with most first, with each one's
-- oldest. `scanned` is the rows read in all (scan_rows read means capped: the counts are lower bounds).
SELECT s.tenant_id, COUNT(*) AS dead, MIN(s.finished_at) AS oldest,
       SUM(COUNT(*)) OVER () AS scanned
FROM ({newest_dead_jobs}) AS s
GROUP BY s.tenant_id
ORDER BY dead DESC, s.tenant_id
LIMIT %(tenants)s;

-- name: dead_newest
-- newest_dead_jobs alone, counted by the caller: behind vtgate (DATABASE_VITESS) a window over a
-- grouped derived table is not planned across shards (VT13001), while an ordered scatter with a
-- LIMIT is: each shard reads at most `scan_rows` along jobs_archiver_idx, vtgate merges the newest.
{newest_dead_jobs};
