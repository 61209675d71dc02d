-- The support console's reads (jobs/console.py, through jobs.queue). Bounded by construction: the
-- admin pages must stay fast however large the jobs table or the DLQ grows.

-- name: admin_dead_by_tenant
-- Dead jobs per tenant, counted over at most the newest N dead jobs (read along
-- jobs_archiver_idx (status, finished_at)), so a huge DLQ is never counted whole.
-- `scanned` is the rows read in all (N + 1 means capped: the counts are lower bounds).
SELECT s.tenant_id, COUNT(*) AS dead, MIN(s.finished_at) AS oldest,
       SUM(COUNT(*)) OVER () AS scanned
FROM (
    SELECT tenant_id, finished_at
    FROM jobs
    WHERE status = 'dead'
    ORDER BY finished_at DESC
    LIMIT %(scan_rows)s
) AS s
GROUP BY s.tenant_id
ORDER BY dead DESC, s.tenant_id
LIMIT %(tenants)s;

-- name: admin_dead_newest
-- The same bounded read without the aggregation, for vtgate (DATABASE_VITESS): a window over
-- a grouped derived table is not planned across shards (VT13001), while an ordered scatter
-- with a LIMIT is: each shard reads at most N along jobs_archiver_idx, vtgate merges the
-- newest N; the counting is done by the caller (jobs.queue.support).
SELECT tenant_id, finished_at
FROM jobs
WHERE status = 'dead'
ORDER BY finished_at DESC
LIMIT %(scan_rows)s;
