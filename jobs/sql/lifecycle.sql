-- A task's lifecycle reaching into the queue (jobs/queue/lifecycle.py): pause, delete, run now.

-- name: cancel_task_jobs
-- Runs in the same transaction as the task's own UPDATE (to paused or deleted), after it: that
-- UPDATE waited for a scheduler tick holding the task row, so the tick's job is committed and this
-- current read sees it. Pending jobs (due, or waiting for a retry) become cancelled; with
-- include_dead (delete) the task's dead jobs leave the DLQ too, keeping their last error. A running
-- job is not touched: its claim stands and its fenced result still lands. A claim racing this
-- statement either locked the row first (SKIP LOCKED; the row is running when this reads it and
-- no longer matches) or is skipped by it (this statement holds the row). Served by
-- jobs_task_scheduled_uniq (task_id, scheduled_at).
UPDATE jobs
SET error = IF(status = 'pending', %(reason)s, error),
    finished_at = IF(status = 'pending', NOW(3), finished_at),
    status = 'cancelled',
    worker_id = NULL,
    lease_expires_at = NULL,
    updated_at = NOW(3)
WHERE task_id = %(task_id)s
  AND tenant_id = %(tenant_id)s
  AND (status = 'pending' OR (%(include_dead)s AND status = 'dead'));

-- name: insert_run_now_job
-- Run now: one extra job of the task, due now, with the task's request snapshot, like the
-- scheduler's insert. scheduled_at is NOW(6), the request's instant to the microsecond, so it
-- does not collide with a cron run (whole seconds) under UNIQUE (task_id, scheduled_at); the
-- caller holds the task row locked (FOR UPDATE), so two runs now of one task never share it
-- either, and a pause or delete waits for this insert and then cancels the job.
INSERT INTO jobs (id, task_id, tenant_id, scheduled_at, next_attempt_at, status, priority, attempt,
                  max_attempts, timeout_seconds, backoff_base_seconds,
                  request_method, request_url, request_headers, request_body, secret_ref, labels, updated_at)
SELECT %(job_id)s, t.id, t.tenant_id, NOW(6), NOW(6), 'pending', t.priority, 0,
       t.max_attempts, t.timeout_seconds, t.backoff_base_seconds,
       t.http_method, t.http_url, t.http_headers, t.http_body, t.secret_ref, t.labels, NOW(6)
FROM tasks AS t
WHERE t.id = %(task_id)s
  AND t.tenant_id = %(tenant_id)s
  AND t.status = 'active';

-- name: run_request_job
-- A run now's Idempotency-Key still within its retention: the job it made. Read under the task's
-- row lock (the caller's FOR UPDATE), so a concurrent run with the same key waits and then finds
-- this one's row. An expired row (older than the retention, not purged yet) reads as no row: the
-- key is forgotten whether or not the archiver has deleted it. Served by run_requests_key_uniq.
SELECT job_id
FROM run_requests
WHERE task_id = %(task_id)s
  AND idempotency_key = %(idempotency_key)s
  AND created_at >= NOW(6) - INTERVAL %(retention_seconds)s SECOND;

-- name: bind_run_request
-- Bind the key to the new job. The row may exist, expired (run_request_job read no live one under
-- the task's lock, which every run of this task takes first): it is rebound, its age restarted.
INSERT INTO run_requests (task_id, tenant_id, idempotency_key, job_id, created_at)
VALUES (%(task_id)s, %(tenant_id)s, %(idempotency_key)s, %(job_id)s, NOW(6))
ON DUPLICATE KEY UPDATE job_id = %(job_id)s, created_at = NOW(6);

-- name: purge_expired_run_requests
-- The archiver's bounded purge: keys older than the retention, oldest first, through
-- run_requests_created_idx, at most `limit` rows a statement (short locks, a backlog drains over
-- steps). A run rebinding an expired key meanwhile set created_at to now: no longer matched.
DELETE FROM run_requests
WHERE created_at < NOW(6) - INTERVAL %(retention_seconds)s SECOND
ORDER BY created_at
LIMIT %(limit)s;
