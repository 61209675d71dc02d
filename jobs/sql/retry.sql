-- Retry from the DLQ: dead jobs back to the queue, the same jobs. One statement for the tenant
-- API's retry and support's (one job, due now: job_retry) and the console's bulk retry (many,
-- paced: jobs_retry_paced), so what a retry does and when it may happen is written once.

-- name: retry_dead_jobs
-- dead → pending, same id and scheduled_at, each job due at NOW(3) + its delay: 0 for a single
-- retry; its slot for a bulk one, so the executors call the tenant's endpoints at the console's
-- pace (ADMIN_BULK_RETRY_PER_SECOND) without the request sleeping. fence, the fencing token, is
-- kept (the next claim raises it), so a late result write from a claim before the retry matches
-- 0 rows; the budget is refreshed to attempt + the task's max_attempts. The guard on status makes two concurrent
-- retries (or a retry racing a claim) count once. A NULL tenant_id is support staff (any tenant).
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
WHERE j.status = 'dead'
  -- The one place of "only an active task's dead job is retried": a paused or deleted task fires
  -- nothing, its dead job stays put (the API's 409 and the console's tally say why).
  AND COALESCE(t.status, 'active') = 'active'  -- no task row (never in the product): one more attempt
  AND (%(tenant_id)s IS NULL OR j.tenant_id = %(tenant_id)s);

-- name: retry_jobs_status
-- After a retry (or a cancel, a discard) changed fewer rows than asked: is each job gone
-- (archived, never existed, another tenant's: no row), not dead, or dead with a task that is not
-- active? The jobs' and their tasks' status, each by primary key.
SELECT j.id, j.status, t.status
FROM jobs AS j
LEFT JOIN tasks AS t ON t.id = j.task_id
WHERE j.id IN ({ids})
  AND (%(tenant_id)s IS NULL OR j.tenant_id = %(tenant_id)s);

-- name: retry_lock_jobs
-- A bulk retry from the support console, first statement: lock the chosen jobs and read their
-- status, so retry_dead_jobs then changes only rows seen dead here, paced among them alone (a
-- concurrent retry, claim or archive waits for this short transaction, or went first).
SELECT id, status
FROM jobs
WHERE id IN ({ids})
FOR UPDATE;
