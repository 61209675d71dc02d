-- The SQL history store (history/sql_store.py). Times are UTC; NOW(6) is the database's clock.

-- name: history_upsert
-- An upsert by key: the archiver rewrites a job after a crash between its two writes.
-- A rewrite refreshes the expiry, as a Cassandra rewrite refreshes the TTL.
-- history.sql_store fills in the column lists from domain.records.JobRecord's stored
-- fields (job_id for its id): all of them to insert, and `c = VALUES(c)` for each outside the key.
INSERT INTO job_history ({insert_columns}, expires_at)
VALUES {rows}
ON DUPLICATE KEY UPDATE {update_columns};

-- name: history_get
-- The columns are the stored fields of domain.records.JobRecord (job_id AS id).
SELECT {record_columns}
FROM job_history
WHERE tenant_id = %s
  AND job_id = %s
  AND expires_at > NOW(6);

-- name: history_page
-- Strictly older than the cursor (scheduled_at, job_id), newest first: the primary key's order.
SELECT {record_columns}
FROM job_history
WHERE tenant_id = %s
  AND task_id = %s
  AND (scheduled_at < %s OR (scheduled_at = %s AND job_id < %s))
  AND expires_at > NOW(6)
ORDER BY scheduled_at DESC, job_id DESC
LIMIT %s;

-- name: history_purge_expired
-- Bounded, so one purge never holds many row locks.
DELETE FROM job_history
WHERE expires_at <= NOW(6)
LIMIT %s;
