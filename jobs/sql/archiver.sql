-- The archiver (workers/archiver.py, through jobs.queue): finished jobs leave the queue for the history store.

-- name: archive_select
-- Terminal jobs of one status finished before the cutoff, oldest first, through
-- jobs_archiver_idx (status, finished_at). No lock: the delete's guard decides.
-- The columns are the stored fields of domain.records.JobRecord, filled in by jobs.queue.
SELECT {record_columns}, fence
FROM jobs
WHERE status = %(status)s
  AND finished_at < NOW(3) - INTERVAL %(age_seconds)s SECOND
ORDER BY finished_at
LIMIT %(limit)s;

-- name: archive_delete
-- Runs only after the history store holds every row. (id, status, fence) as read:
-- a dead job retried by hand meanwhile is pending now (and a retry that already
-- ran again has a higher fence), so it no longer matches and stays in the queue.
-- The multi-table form only to allow FORCE INDEX: without it MariaDB 10.11's range
-- optimizer spent ~1 s weighing every status-prefixed index for 500 tuples (the
-- delete itself took ~10 ms, measured); MySQL 8 accepts the same statement.
DELETE j
FROM jobs AS j FORCE INDEX (PRIMARY)
WHERE (j.id, j.status, j.fence) IN ({rows});

-- name: archive_delete_unhinted
-- archive_delete behind vtgate (DATABASE_VITESS): vttablet's parser refuses an index hint in
-- a DELETE. The same guard; on a shard holding a fraction of the queue the optimizer's cost
-- for the tuples is not measured yet (docs/how-to/sharding.md).
DELETE FROM jobs
WHERE (id, status, fence) IN ({rows});
