-- A task's lifecycle reaching into the queue (jobs/queue_lifecycle.py): pause and delete.

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
