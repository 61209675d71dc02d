-- The scheduler's tick (workers/scheduler.py through jobs.queue.schedule_due_tasks), one transaction of three statements:
--   scheduler_select_due     lock the due tasks, oldest first
--   scheduler_insert_jobs    ONE multi-row insert of their jobs, snapshot copied from the task rows
--   scheduler_advance_tasks  ONE update of every selected next_run_at
-- The selected rows travel as one JSON document read by JSON_TABLE (MariaDB 10.6+, MySQL 8.0+),
--   [["<task id, 32 hex>", "<new job id, 32 hex>", next run or null, the job's scheduled_at or null], ...]
-- (times as "YYYY-MM-DD HH:MM:SS.ffffff"; the scheduled_at is the task's next_run_at, or, for a run
-- reached late, what its missed-runs policy chose: tasks/schedule/missed.py; null: no job this tick)
-- so each statement has one placeholder whatever the batch size. Ids go as hex and come back
-- through UNHEX, a binary string: the join compares bytes with the BINARY(16) primary key
-- (eq_ref, no collation involved), and a JSON null next run is SQL NULL.

-- name: scheduler_select_due
-- FOR UPDATE, not SKIP LOCKED: a second scheduler waits for this tick to commit, then sees the
-- advanced next_run_at and skips those tasks. No lower bound: a task reached late is created
-- late, never skipped. Served by tasks_due_idx (status, next_run_at), whose order is the ORDER BY.
-- db_now is the clock the WHERE compared with (the tick's lag is measured from it).
-- A paused tenant's tasks (tasks.pausing) are passed over and keep their next_run_at, so on
-- resume each one's missed-runs policy applies as after any outage. For the NOT EXISTS MariaDB
-- reads the paused tenants' ids once from tenant_limits_paused_idx (paused, tenant_id), index
-- only, and probes them per due task (EXPLAIN: MATERIALIZED, ref const; `l.paused` without the
-- `= 1` made it a range per row); a plain read, those rows are not locked (FOR UPDATE does not
-- reach into the subquery, measured): a pause committed during a tick counts from the next one.
-- A paused tenant's overdue tasks stay at the head of tasks_due_idx, read and passed over by
-- every tick until it is resumed.
SELECT id, next_run_at, cron_expression, timezone, missed_runs, NOW(3) AS db_now
FROM tasks
WHERE status = 'active'
  AND next_run_at <= NOW(3) + INTERVAL %(lookahead_microseconds)s MICROSECOND
  AND NOT EXISTS (SELECT 1 FROM tenant_limits AS l WHERE l.tenant_id = tasks.tenant_id AND l.paused = 1)
ORDER BY next_run_at
LIMIT %(limit)s
FOR UPDATE

-- name: scheduler_insert_jobs
-- The snapshot is read from the task rows this transaction holds locked, so it is the version
-- that was due; scheduled_at is the planned run (next_run_at unless the run was missed). UNIQUE (task_id, scheduled_at) turns a job that already
-- exists (a task resumed inside the lookahead) into a no-op; `jobs.id`, because a bare `id`
-- is ambiguous next to tasks.id.
-- Calendars (jobs/sql/calendars.sql): a run on an excluded date is inserted skipped, finished, its
-- reason in error; the three columns below are all that part.
INSERT INTO jobs (id, task_id, tenant_id, scheduled_at, next_attempt_at, status, priority, attempt,
                  max_attempts, timeout_seconds, backoff_base_seconds,
                  request_method, request_url, request_headers, request_body, secret_ref, labels, updated_at,
                  error, finished_at)
SELECT UNHEX(due.job_id), t.id, t.tenant_id, due.scheduled_at, due.scheduled_at,
       IF({calendar_skip_reason} IS NULL, 'pending', 'skipped'), t.priority, 0,
       t.max_attempts, t.timeout_seconds, t.backoff_base_seconds,
       t.http_method, t.http_url, t.http_headers, t.http_body, t.secret_ref, t.labels, NOW(6),
       {calendar_skip_reason}, IF({calendar_skip_reason} IS NULL, NULL, NOW(6))
FROM JSON_TABLE(%(due)s, '$[*]' COLUMNS (task_id CHAR(32) PATH '$[0]',
                                        job_id CHAR(32) PATH '$[1]',
                                        scheduled_at DATETIME(6) PATH '$[3]')) AS due
JOIN tasks t ON t.id = UNHEX(due.task_id)
WHERE due.scheduled_at IS NOT NULL
ON DUPLICATE KEY UPDATE id = jobs.id

-- name: scheduler_advance_tasks
-- One statement for every selected task (a per-task UPDATE was the original system's
-- bottleneck), run after the insert, which reads the run being scheduled from next_run_at.
-- Only next_run_at: version is the tenant's ETag and updated_at their last edit.
UPDATE JSON_TABLE(%(due)s, '$[*]' COLUMNS (task_id CHAR(32) PATH '$[0]',
                                      next_run_at DATETIME(6) PATH '$[2]')) AS due
JOIN tasks t ON t.id = UNHEX(due.task_id)
SET t.next_run_at = due.next_run_at

-- name: scheduler_max_allowed_packet
SELECT @@max_allowed_packet
