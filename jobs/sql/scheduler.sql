-- The scheduler's tick (workers/scheduler.py through jobs.queue.schedule_due_tasks), one transaction of
-- at most six statements whatever the batch size (three for a batch of tasks without the schedule options):
--   scheduler_select_due            lock the due tasks, oldest first
--   scheduler_insert_jobs           ONE multi-row insert of the jobs of tasks without schedule options,
--                                   snapshot copied from the task rows
--   scheduler_insert_guarded_jobs   ONE insert of the other tasks' jobs (their call times), each pending
--                                   or skipped by its overlap policy (only when the batch has such tasks)
--   scheduler_replace_waiting_jobs  ONE update cancelling the runs a `replace` run replaces (only when
--                                   the batch has such tasks)
--   scheduler_advance_tasks         ONE update of the selected next_run_at of tasks without run limits
--   scheduler_advance_limited_tasks ONE update of the tasks with run limits (ends_at, max_runs): next
--                                   run, run count, completion (only when the batch has such tasks)
-- The selected rows travel as JSON documents read by JSON_TABLE (MariaDB 10.6+, MySQL 8.0+),
--   [["<task id, 32 hex>", "<new job id, 32 hex>", next run or null, the job's scheduled_at or null,
--     call time or null, completes (1) or null, overlap policy or null], ...]
-- (times as "YYYY-MM-DD HH:MM:SS.ffffff"; the scheduled_at is the task's next_run_at, or, for a run
-- reached late, what its missed-runs policy chose: tasks/schedule/missed.py; null: no job this tick;
-- the call time, the job's first next_attempt_at, is scheduled_at plus the task's window offset,
-- tasks/schedule/window.py, null meaning scheduled_at; completes: the task is past its ends_at or
-- max_runs, tasks/schedule/bounds.py; the last three are left out of the row of a task without
-- options: no window, overlap `allow`, no ends_at or max_runs)
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
SELECT id, next_run_at, cron_expression, timezone, missed_runs, NOW(3) AS db_now,
       every_seconds, window_seconds, overlap, ends_at, max_runs, runs_scheduled
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
-- is ambiguous next to tasks.id. Tasks without schedule options only (no window, overlap `allow`,
-- no run limits): their insert reads no other job (a SELECT reading `jobs` would make this INSERT
-- buffer its rows in a temporary table) and is the statement it was before the options.
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

-- name: scheduler_insert_guarded_jobs
-- The jobs of tasks with schedule options (a window, an overlap policy, run limits): the job's first
-- next_attempt_at is its call time, and its status is decided by its overlap policy
-- (tasks/schedule/overlap.py; `allow`: pending), here,
-- in the tick's transaction, against the task's jobs as they are now: the task row is locked FOR
-- UPDATE by this tick, so no other scheduler makes a run of it meanwhile (several schedulers agree).
-- Earlier runs only (scheduled_at before this one): pending (waiting, or waiting for a retry) or
-- running. skip: skipped when one is unfinished; buffer_one: skipped when one is pending (at most
-- one waits), else called no earlier than the lease end of a call in flight; replace: always pending (scheduler_replace_waiting_jobs cancels the waiting ones).
-- A skipped job is terminal from its insert: finished_at set, the reason in `error` (an excluded
-- calendar date, calendars.sql, wins over the overlap policy). Served by the
-- unique (task_id, scheduled_at) index (a range of the task's unarchived jobs), then the rows.
-- The derived table reads `jobs`, so the server buffers the selected rows before inserting: the
-- reason these tasks have their own statement.
INSERT INTO jobs (id, task_id, tenant_id, scheduled_at, next_attempt_at, status, priority, attempt,
                  max_attempts, timeout_seconds, backoff_base_seconds,
                  request_method, request_url, request_headers, request_body, secret_ref, labels, updated_at,
                  finished_at, error)
SELECT g.id, g.task_id, g.tenant_id, g.scheduled_at, g.call_at, IF(g.reason IS NULL, 'pending', 'skipped'),
       g.priority, 0, g.max_attempts, g.timeout_seconds, g.backoff_base_seconds,
       g.http_method, g.http_url, g.http_headers, g.http_body, g.secret_ref, g.labels, NOW(6),
       IF(g.reason IS NULL, NULL, NOW(6)), g.reason
FROM (
    SELECT UNHEX(due.job_id) AS id, t.id AS task_id, t.tenant_id, due.scheduled_at,
           -- buffer_one: a run behind a call in flight waits for it, called no earlier than that
           -- call's lease end (its timeout; a retry it asks for then waits behind this run).
           GREATEST(COALESCE(due.call_at, due.scheduled_at), COALESCE(IF(due.overlap = 'buffer_one', (
               SELECT MAX(r.lease_expires_at) FROM jobs AS r
               WHERE r.task_id = t.id AND r.scheduled_at < due.scheduled_at AND r.status = 'running'), NULL),
               COALESCE(due.call_at, due.scheduled_at))) AS call_at,
           t.priority, t.max_attempts, t.timeout_seconds,
           t.backoff_base_seconds, t.http_method, t.http_url, t.http_headers, t.http_body, t.secret_ref,
           t.labels,
           -- An excluded calendar date first (calendars.sql), then the overlap policy; NULL: pending.
           COALESCE({calendar_skip_reason}, CASE
               WHEN due.overlap = 'skip' AND EXISTS (
                   SELECT 1 FROM jobs AS p
                   WHERE p.task_id = t.id AND p.scheduled_at < due.scheduled_at
                     AND p.status IN ('pending', 'running'))
                   THEN 'overlap:skip'
               WHEN due.overlap = 'buffer_one' AND EXISTS (
                   SELECT 1 FROM jobs AS p
                   WHERE p.task_id = t.id AND p.scheduled_at < due.scheduled_at AND p.status = 'pending')
                   THEN 'overlap:buffer_one'
           END) AS reason
    FROM JSON_TABLE(%(due)s, '$[*]' COLUMNS (task_id CHAR(32) PATH '$[0]',
                                            job_id CHAR(32) PATH '$[1]',
                                            scheduled_at DATETIME(6) PATH '$[3]',
                                            call_at DATETIME(6) PATH '$[4]',
                                            overlap VARCHAR(10) PATH '$[6]')) AS due
    JOIN tasks t ON t.id = UNHEX(due.task_id)
    WHERE due.scheduled_at IS NOT NULL
) AS g
ON DUPLICATE KEY UPDATE id = jobs.id

-- name: scheduler_replace_waiting_jobs
-- `replace`: the task's earlier runs still pending (waiting for their time, or for a retry) are
-- cancelled for the new one, with the reason `overlap:replaced`; a running one (a call in flight)
-- is never touched. `status = 'pending'` in the WHERE is the race with a claim: whichever locks the
-- row first wins (a claim marks it running in its own transaction and this matches 0 rows; or this
-- cancels it and the claim's `AND status = 'pending'` matches 0). A retry asked by a call in flight
-- after this tick is cancelled by the next run's tick. Served by the unique (task_id, scheduled_at).
UPDATE JSON_TABLE(%(due)s, '$[*]' COLUMNS (task_id CHAR(32) PATH '$[0]',
                                      scheduled_at DATETIME(6) PATH '$[3]',
                                      overlap VARCHAR(10) PATH '$[6]')) AS due
-- Only for a new run that will be called (`n`): one skipped on an excluded calendar date replaces nothing.
JOIN jobs n ON n.task_id = UNHEX(due.task_id) AND n.scheduled_at = due.scheduled_at AND n.status = 'pending'
JOIN jobs j ON j.task_id = UNHEX(due.task_id) AND j.scheduled_at < due.scheduled_at
SET j.status = 'cancelled',
    j.error = 'overlap:replaced',
    j.finished_at = NOW(3),
    j.worker_id = NULL,
    j.lease_expires_at = NULL,
    j.updated_at = NOW(3)
WHERE due.overlap = 'replace'
  AND due.scheduled_at IS NOT NULL
  AND j.status = 'pending'

-- name: scheduler_advance_tasks
-- One statement for every selected task without run limits (a per-task UPDATE was the original
-- system's bottleneck), run after the inserts, which read the run being scheduled from `due`.
-- Only next_run_at: version is the tenant's ETag and updated_at their last edit. Kept to this
-- one column: writing the run count and the completion check on every row too cost the plain
-- batch ~10 percent (bench-scheduler, 2026-12-03), so tasks with limits have their own statement.
UPDATE JSON_TABLE(%(due)s, '$[*]' COLUMNS (task_id CHAR(32) PATH '$[0]',
                                      next_run_at DATETIME(6) PATH '$[2]')) AS due
JOIN tasks t ON t.id = UNHEX(due.task_id)
SET t.next_run_at = due.next_run_at

-- name: scheduler_advance_limited_tasks
-- The tasks with ends_at or max_runs (tasks/schedule/bounds.py): next_run_at, the run count (a run
-- scheduled: its job made, skipped or not) and, for a task past a limit, its completion (status
-- `completed`, or `deleted` with deleted_at when it asked to be deleted after completion; its last
-- run's job stays and fires). Never version or updated_at. Each assignment reads only `due` and
-- columns no other assignment writes (a multi-table UPDATE may assign in any order).
UPDATE JSON_TABLE(%(due)s, '$[*]' COLUMNS (task_id CHAR(32) PATH '$[0]',
                                      next_run_at DATETIME(6) PATH '$[2]',
                                      scheduled_at DATETIME(6) PATH '$[3]',
                                      completes INT PATH '$[5]')) AS due
JOIN tasks t ON t.id = UNHEX(due.task_id)
SET t.next_run_at = due.next_run_at,
    t.runs_scheduled = t.runs_scheduled + (due.scheduled_at IS NOT NULL),
    t.status = IF(due.completes = 1, IF(t.delete_after_completion, 'deleted', 'completed'), t.status),
    t.deleted_at = IF(due.completes = 1 AND t.delete_after_completion, NOW(6), t.deleted_at)

-- name: scheduler_completed_tasks
-- The tasks this tick completed, read back in its transaction (their rows are locked by it) for their
-- audit records and notifications (jobs/queue/scheduling.py); `deleted` when they asked to be.
-- Served by the primary key.
SELECT id, tenant_id, status, runs_scheduled
FROM tasks
WHERE id IN ({ids})

-- name: scheduler_max_allowed_packet
SELECT @@max_allowed_packet
