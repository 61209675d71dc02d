-- Backfill (jobs.backfill, through jobs.queue.backfill): a task's past runs in a range, made as the
-- scheduler makes a run. Idempotent through UNIQUE (task_id, scheduled_at) (jobs_task_scheduled_uniq).

-- name: backfill_existing_runs
-- The task's runs still in the queue in [from, to): one range of jobs_task_scheduled_uniq. Read
-- before the history (the archiver writes the history, then deletes here): a run is in one or the other.
SELECT scheduled_at
FROM jobs
WHERE task_id = %(task_id)s
  AND scheduled_at >= %(from)s
  AND scheduled_at < %(to)s;

-- name: backfill_insert_jobs
-- The runs as one JSON document [["<job id, 32 hex>", "YYYY-MM-DD HH:MM:SS.ffffff", reason or null], ...]
-- (reason: the overlap policy's, jobs.backfill.runs_for_overlap: made skipped), the request
-- snapshot copied from the task row the caller holds locked (FOR UPDATE: a pause or delete waits,
-- then cancels these jobs; the scheduler's tick waits too). A run on a date an excluded calendar
-- holds is inserted skipped, as the scheduler does (jobs/sql/calendars.sql). A run that exists
-- already (made by the scheduler or another backfill since it was read) is a no-op.
INSERT INTO jobs (id, task_id, tenant_id, scheduled_at, next_attempt_at, status, priority, attempt,
                  max_attempts, timeout_seconds, backoff_base_seconds,
                  request_method, request_url, request_headers, request_body, secret_ref, labels, updated_at,
                  error, finished_at)
SELECT UNHEX(due.job_id), t.id, t.tenant_id, due.scheduled_at, due.scheduled_at,
       IF(COALESCE({calendar_skip_reason}, due.reason COLLATE utf8mb4_nopad_bin) IS NULL, 'pending', 'skipped'), t.priority, 0,
       t.max_attempts, t.timeout_seconds, t.backoff_base_seconds,
       t.http_method, t.http_url, t.http_headers, t.http_body, t.secret_ref, t.labels, NOW(6),
       COALESCE({calendar_skip_reason}, due.reason COLLATE utf8mb4_nopad_bin),
       IF(COALESCE({calendar_skip_reason}, due.reason COLLATE utf8mb4_nopad_bin) IS NULL, NULL, NOW(6))
FROM JSON_TABLE(%(runs)s, '$[*]' COLUMNS (job_id CHAR(32) PATH '$[0]',
                                         scheduled_at DATETIME(6) PATH '$[1]',
                                         reason VARCHAR(64) PATH '$[2]')) AS due
JOIN tasks t ON t.id = %(task_id)s
WHERE t.tenant_id = %(tenant_id)s
  AND t.status = 'active'
ON DUPLICATE KEY UPDATE id = jobs.id;

-- name: backfill_inserted
-- Which of the ids just sent became jobs (the others were no-ops), by status; in the inserting
-- transaction, so none can have been archived yet. Primary key lookups.
SELECT status, COUNT(*)
FROM jobs
WHERE id IN ({ids})
GROUP BY status;
