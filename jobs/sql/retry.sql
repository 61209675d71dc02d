-- Manual retry from the DLQ (job_retry): the same job goes back to the queue.

-- name: retry_dead_job
-- dead → pending, same id and scheduled_at. attempt is the fencing token and is
-- kept, so a late result write from a claim before the retry matches 0 rows; the
-- budget is refreshed to attempt + the task's max_attempts. The guard on status
-- makes two concurrent retries (or a retry racing a claim) count once.
-- A NULL tenant_id is support staff (any tenant).
UPDATE jobs AS j
LEFT JOIN tasks AS t ON t.id = j.task_id
SET j.status = 'pending',
    j.max_attempts = j.attempt + COALESCE(t.max_attempts, 1),
    j.next_attempt_at = NOW(3),
    j.error = NULL,
    j.http_status = NULL,
    j.response_body = NULL,
    j.worker_id = NULL,
    j.lease_expires_at = NULL,
    j.started_at = NULL,
    j.finished_at = NULL,
    j.updated_at = NOW(3)
WHERE j.id = %(job_id)s
  AND j.status = 'dead'
  -- A paused or deleted task fires nothing: its dead job stays put (the API's 409 says why).
  AND COALESCE(t.status, 'active') = 'active'  -- no task row (never in the product): one more attempt
  AND (%(tenant_id)s IS NULL OR j.tenant_id = %(tenant_id)s);

-- name: retry_job_status
-- After a retry matched 0 rows: is the job gone (archived, never existed, another
-- tenant's), not dead, or dead with a task that is not active? The job's and its task's status.
SELECT j.status, t.status
FROM jobs AS j
LEFT JOIN tasks AS t ON t.id = j.task_id
WHERE j.id = %(job_id)s
  AND (%(tenant_id)s IS NULL OR j.tenant_id = %(tenant_id)s);

-- name: retry_lock_jobs
-- A bulk retry from the support console, first statement: lock the chosen jobs and read
-- their status, so the staggered UPDATE below changes exactly the rows seen dead here
-- (a concurrent retry, claim or archive waits for this short transaction, or went first).
SELECT id, status, task_id
FROM jobs
WHERE id IN ({ids})
FOR UPDATE;

-- name: retry_dead_jobs_staggered
-- The bulk retry's second statement: each locked dead job back to pending as
-- retry_dead_job does, but due at NOW(3) + its slot's delay instead of at once, so
-- the executors call the tenant's endpoints at the console's pace
-- (ADMIN_BULK_RETRY_PER_SECOND) without the request sleeping. attempt is kept (the
-- fencing token); the budget is refreshed to attempt + the task's max_attempts.
-- The [id in hex, delay] pairs come as one JSON document, read first, each job and task by its
-- primary key (as the executor's result_write, jobs/sql/executor.sql, for the same reasons).
UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (id CHAR(32) PATH '$[0]', delay_us BIGINT PATH '$[1]')) AS s
STRAIGHT_JOIN jobs AS j FORCE INDEX (PRIMARY) ON j.id = UNHEX(s.id)
LEFT JOIN tasks AS t FORCE INDEX (PRIMARY) ON t.id = j.task_id
SET j.status = 'pending',
    j.max_attempts = j.attempt + COALESCE(t.max_attempts, 1),
    j.next_attempt_at = NOW(3) + INTERVAL s.delay_us MICROSECOND,
    j.error = NULL,
    j.http_status = NULL,
    j.response_body = NULL,
    j.worker_id = NULL,
    j.lease_expires_at = NULL,
    j.started_at = NULL,
    j.finished_at = NULL,
    j.updated_at = NOW(3)
WHERE j.status = 'dead';
