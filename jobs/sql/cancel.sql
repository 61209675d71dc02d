-- Cancel (pending) and discard (dead), by support staff or by the tenant (jobs/queue/support.py,
-- called by jobs/services.py).
-- Both are compare-and-sets on status like the manual retry: 0 rows means the job is gone
-- or no longer in the state the caller saw, and a second read (retry_jobs_status) says which.

-- name: cancel_pending_job
-- pending → cancelled, never to run. A claim racing this either locked the row first (FOR
-- UPDATE SKIP LOCKED, then marked it running in the same transaction: this statement's
-- current read sees 'running' and matches 0 rows: "no longer pending") or is skipped by it
-- (this statement holds the row lock, and the claim's SKIP LOCKED passes over it). A job
-- waiting for a retry is pending too and is cancelled the same way; its attempts are kept.
-- tenant_id NULL = support staff (any tenant). Served by the primary key.
UPDATE jobs
SET status = 'cancelled',
    error = %(reason)s,
    finished_at = NOW(3),
    worker_id = NULL,
    lease_expires_at = NULL,
    updated_at = NOW(3)
WHERE id = %(job_id)s
  AND status = 'pending'
  AND (%(tenant_id)s IS NULL OR tenant_id = %(tenant_id)s);

-- name: discard_dead_job
-- dead → cancelled: the job leaves the dead-letter queue for good, keeping its last error
-- and the time it died (the archiver then moves it to the history like any finished job).
-- The guard on status makes a discard racing a retry count once: whichever commits first
-- wins, the other matches 0 rows.
UPDATE jobs
SET status = 'cancelled',
    updated_at = NOW(3)
WHERE id = %(job_id)s
  AND status = 'dead'
  AND (%(tenant_id)s IS NULL OR tenant_id = %(tenant_id)s);
