-- The executor: claim due jobs, then record each call's result behind the fence.
-- Times come from the database clock (NOW(3)) only, never a worker's.

-- name: claim_due_priority_probe
-- Which priority levels have a due job: one range read of at most one index entry on
-- jobs_claim_idx (pending_priority, next_attempt_at) for one level (pending_priority is the
-- priority of a pending job and NULL for any other: jobs.models.Job). jobs.queue joins one
-- probe per level of tasks.priority.PRIORITIES with UNION ALL, so an empty poll reads one entry
-- per level: a single ORDER BY priority, next_attempt_at scan walks every future job
-- (measured 73 ms per empty poll with 30,000 future jobs, ~0.3 ms this way). No locks, and
-- read uncommitted: a hint the claim's locking reads check (jobs.queue.claims._read_uncommitted_next).
SELECT {priority} AS priority
FROM jobs
WHERE pending_priority = {priority}
  AND next_attempt_at <= NOW(3) + INTERVAL %(lookahead_seconds)s SECOND
LIMIT 1;

-- name: claim_mark_running
-- Second statement of the claim, same transaction, committed before any HTTP call.
-- fence + 1 is the new fencing token (attempt + 1 counts the call about to be made). The lease
-- runs from the job's own time, not the claim's, so a job parked on its timer for up to one poll
-- is never reclaimed; %(lease_slack_seconds)s is jobs.queue.claims.LEASE_SLACK_SECONDS (its one place).
UPDATE jobs
SET status = 'running',
    worker_id = %(worker_id)s,
    attempt = attempt + 1,
    fence = fence + 1,
    started_at = NOW(3),
    lease_expires_at = GREATEST(next_attempt_at, NOW(3)) + INTERVAL (timeout_seconds + %(lease_slack_seconds)s) SECOND,
    updated_at = NOW(3)
WHERE id IN ({ids})
  AND status = 'pending';

-- name: claim_release
-- Give back claimed jobs that were never called (run_executor's prefetch: a job that waited for a
-- call slot until too little of its lease was left, or was not called when its executor stopped).
-- Each row behind its own fence, as a result is; a job the reconciler already took
-- back (or anyone else holds) matches 0 rows and is left as it is. The claim's attempt + 1 is undone
-- (no call was made: the attempt budget and X-Attempt are unchanged), while the fence grows once
-- more: the row's token is then larger than any claim ever handed out, so this statement sent again
-- (its answer lost), or any late write of this holding, matches 0 rows even after the same worker
-- claimed the job again. Nothing is written to the attempt log or the task's health.
-- started_at goes back to NULL for a job never run before; a retry keeps this claim's time (its
-- earlier attempts' are in the attempt log). The rows are one JSON document of
-- [id in hex, fence, attempt], read first and each job found by its primary key, as in result_write;
-- only r's values on the right (a multi-table UPDATE may assign in any order).
UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (
    id CHAR(32) PATH '$[0]', fence BIGINT PATH '$[1]', attempt BIGINT PATH '$[2]'
)) AS r
STRAIGHT_JOIN jobs AS j FORCE INDEX (PRIMARY) ON j.id = UNHEX(r.id)
SET j.status = 'pending',
    j.attempt = r.attempt - 1,
    j.fence = r.fence + 1,
    j.worker_id = NULL,
    j.started_at = IF(r.attempt = 1, NULL, j.started_at),
    j.lease_expires_at = NULL,
    j.updated_at = NOW(3)
WHERE j.status = 'running'
  AND j.worker_id = %(worker_id)s
  AND j.fence = r.fence;

-- name: result_lock_fenced
-- Lock the rows that still carry our claim, so the writes below are exact and every
-- dropped result is known by id (the caller keeps only rows whose fence matches).
SELECT id, fence, task_id, scheduled_at, tenant_id
FROM jobs
WHERE status = 'running'
  AND worker_id = %(worker_id)s
  AND id IN ({ids})
FOR UPDATE;

-- name: result_lock_tasks
-- The written results' tasks (and the reconciler sweep's: jobs.queue.task_health runs these two
-- statements for both), locked in id order before any of them is read or written, so two
-- batches (executors', the reconciler's) queue on a task instead of deadlocking (a scheduler tick locks in
-- next_run_at order: a deadlock with it is possible, and InnoDB rolls back one side, which
-- retries). With their health counters, so the write below sets exact values.
SELECT id, status, consecutive_failures, auto_pause_after
FROM tasks
WHERE id IN ({ids})
ORDER BY id
FOR UPDATE;

-- name: result_update_tasks
-- How each task is doing, one statement per batch (never one per job): its last run and its
-- dead jobs in a row, computed from the rows locked above; status and paused_reason change only
-- when this batch's dead jobs reach the task's auto-pause threshold. Not version: the ETag is
-- the tenant's edits. The rows come as one JSON document (as in result_write; ids in hex).
-- Its columns are wider than their targets (TEXT, BIGINT): JSON_TABLE truncates or clamps what
-- does not fit with a warning only, so the target column's own strict check must see the value.
-- The document is read first and each task found by its primary key (STRAIGHT_JOIN, FORCE INDEX):
-- with a few tasks in the table MariaDB chose to scan tasks and read the document per row,
-- locking every task it passed (a reconciler test's sweep and batch then deadlocked).
UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (
    id CHAR(32) PATH '$[0]', consecutive_failures BIGINT PATH '$[1]', job_id CHAR(32) PATH '$[2]',
    scheduled_at DATETIME(6) PATH '$[3]', outcome TEXT PATH '$[4]', http_status BIGINT PATH '$[5]',
    pause BIGINT PATH '$[6]', paused_reason TEXT PATH '$[7]'
)) AS h
STRAIGHT_JOIN tasks AS t FORCE INDEX (PRIMARY) ON t.id = UNHEX(h.id)
SET t.consecutive_failures = h.consecutive_failures,
    t.last_run_job_id = UNHEX(h.job_id),
    t.last_run_scheduled_at = h.scheduled_at,
    t.last_run_status = h.outcome,
    t.last_run_http_status = h.http_status,
    t.last_run_at = NOW(3),
    t.status = IF(h.pause, 'paused', t.status),
    t.paused_reason = IF(h.pause, h.paused_reason, t.paused_reason);

-- name: result_write
-- Every result of a batch in one statement; each row keeps its own fence. fence
-- is the fencing token: a late write from an older claim (the reconciler took the
-- job back, the job was given back, or another claim, even by the same worker id, holds
-- it now) matches 0 rows and leaves the row untouched. The results are one JSON document, an array of
-- [id in hex, fence, attempt, status, http_status, error, response_body, delay_seconds, duration_ms]
-- per result, read by JSON_TABLE and joined on the primary key (jobs.queue.statements.json_rows:
-- a derived table of one SELECT per result cost the server ~6 ms per 500 to build, this ~1.4).
-- delay_seconds is the retry backoff (NULL unless status = 'pending'); the due time still comes
-- from NOW(3).
-- The task's status is read with a lock (a joined table in an UPDATE is a locking read), so a
-- pause or delete committed while the call was in flight is seen here: the retry it asks for is
-- cancelled instead (a paused task fires nothing), and a dead job of a deleted task is cancelled
-- too (it leaves the DLQ). A job without a task row (tests, benches) counts as active; a completed
-- task's (its last run, tasks/schedule/bounds.py) keeps its retries.
-- The document first, each job and task by its primary key, its columns wider than their
-- targets, as in result_update_tasks.
UPDATE JSON_TABLE({json}, '$[*]' COLUMNS (
    id CHAR(32) PATH '$[0]', fence BIGINT PATH '$[1]', attempt BIGINT PATH '$[2]', status TEXT PATH '$[3]',
    http_status BIGINT PATH '$[4]', error TEXT PATH '$[5]', response_body LONGTEXT PATH '$[6]',
    delay_seconds BIGINT PATH '$[7]', duration_ms BIGINT PATH '$[8]'
)) AS r
STRAIGHT_JOIN jobs AS j FORCE INDEX (PRIMARY) ON j.id = UNHEX(r.id)
LEFT JOIN tasks AS t FORCE INDEX (PRIMARY) ON t.id = j.task_id
SET -- The attempt log, in the same statement (no extra round trip): one compact entry
    -- [attempt, finished_at, duration_ms, status, http_status, error] (domain.attempt_log
    -- reads it; finished_at is Unix milliseconds from NOW(3), the start is finished_at - duration_ms;
    -- not UNIX_TIMESTAMP, which is NULL past 2038 before MariaDB 11.5; from a typed literal: the
    -- string '1970-01-01' was parsed again on every row, +3 points of the server's CPU),
    -- appended as text with no JSON parse: only this statement and the reconciler's
    -- (reconcile_expired_leases) write the column, always a JSON array, so its last character is
    -- the closing bracket and the entries before it stay as they are. Measured with
    -- bench.result_write: keyed objects with formatted times (~250 bytes) cost +12.7 to +17.5
    -- percent per batch on a first attempt, mostly the bytes themselves; this entry is ~45, built
    -- by CONCAT without spaces (the same through JSON_ARRAY, which adds them, cost 3 points more of
    -- the server's CPU). Numbers are written as they are, text through JSON_QUOTE.
    -- Past attempt 20 (rare: a manual retry grants a fresh budget) JSON_REMOVE first drops the
    -- oldest entry, keeping at most 20 (AND short-circuits: no JSON function on the usual path).
    -- Only r's values and j.attempts itself: a multi-table UPDATE may assign in any order.
    j.attempts = CONCAT(
        CASE
            WHEN j.attempts IS NULL OR j.attempts = '[]' THEN '['
            WHEN r.attempt > 20 AND JSON_LENGTH(j.attempts) >= 20
                THEN REGEXP_REPLACE(JSON_REMOVE(j.attempts, '$[0]'), ']$', ',')
            ELSE CONCAT(LEFT(j.attempts, CHAR_LENGTH(j.attempts) - 1), ',')
        END,
        '[', r.attempt, ',', TIMESTAMPDIFF(MICROSECOND, TIMESTAMP'1970-01-01 00:00:00', NOW(3)) DIV 1000, ',',
        COALESCE(r.duration_ms, 'null'), ',',
        JSON_QUOTE(r.status), ',', COALESCE(r.http_status, 'null'), ',', COALESCE(JSON_QUOTE(r.error), 'null'),
        ']]'
    ),
    j.status = CASE
        WHEN r.status = 'pending' AND COALESCE(t.status, 'active') NOT IN ('active', 'completed') THEN 'cancelled'
        WHEN r.status = 'dead' AND t.status = 'deleted' THEN 'cancelled'
        ELSE r.status
    END,
    j.http_status = r.http_status,
    j.error = r.error,
    j.response_body = r.response_body,
    j.next_attempt_at = IF(r.status = 'pending', NOW(3) + INTERVAL r.delay_seconds SECOND, j.next_attempt_at),
    j.finished_at = IF(r.status = 'pending' AND COALESCE(t.status, 'active') IN ('active', 'completed'), NULL, NOW(3)),
    j.worker_id = IF(r.status = 'pending' AND COALESCE(t.status, 'active') IN ('active', 'completed'), NULL, j.worker_id),
    j.lease_expires_at = NULL,
    j.updated_at = NOW(3)
WHERE j.status = 'running'
  AND j.worker_id = %(worker_id)s
  AND j.fence = r.fence;

-- The fair claim (jobs/queue/claims.py, jobs/fairness.py; docs: explanation/fairness.md).
-- Free slots are shared among the tenants with due jobs, priority orders jobs inside a tenant.
-- Named parameters. {levels} is the probe's list of due priority levels (integer literals).

-- name: fair_walk
-- The walk (no locks; its first chunk reads uncommitted rows, before the claim's
-- transaction: jobs.queue.claims._read_uncommitted_next): the next tenants with pending jobs
-- after the round-robin cursor, in tenant order, each with the key of its first due job in its own priority order (NULLs:
-- nothing due). Both read jobs_tenant_due_idx (pending_tenant, priority, next_attempt_at), whose
-- pending_tenant is the tenant of a pending job and NULL for any other (jobs.models.Job): the
-- DISTINCT is a loose index scan, one dive per tenant; the first due job reads from the tenant's
-- first entry, in index order, until one is due. One statement per chunk of tenants: a UNION ALL of one SELECT per
-- tenant costs MariaDB ~0.5 ms per branch (measured, 500 branches: 280-790 ms against 10-130 ms
-- this way). {bound} is empty, or `AND pending_tenant <= %(until)s` for the pass after wrapping around.
-- The index is forced: with statistics taken while a burst was being inserted, MariaDB chose
-- jobs_claim_idx for the first due job (it matches the ORDER BY ... LIMIT 1) and read every due
-- job of the other tenants before reaching this one's: 4.4 million rows and 2.3 s per walk in
-- `make bench` (30,000 jobs, 100 tenants), against 100 rows and under 1 ms with the right index.
-- paced: whether the tenant has a rate-limit bucket (jobs.queue.pacing), one dive into
-- origin_buckets_tenant_origin_uniq per tenant; for a tenant without any the claim sends nothing more.
SELECT t.tenant_id, j.priority, j.next_attempt_at, j.id,
       EXISTS (SELECT 1 FROM origin_buckets AS p WHERE p.tenant_id = t.tenant_id) AS paced
FROM (SELECT DISTINCT pending_tenant AS tenant_id
      FROM jobs FORCE INDEX (jobs_tenant_due_idx)
      WHERE pending_tenant > %(after)s {bound}
      ORDER BY pending_tenant
      LIMIT %(limit)s) AS t
LEFT JOIN jobs AS j
  ON j.id = (SELECT d.id
             FROM jobs AS d FORCE INDEX (jobs_tenant_due_idx)
             WHERE d.pending_tenant = t.tenant_id
               AND d.priority IN ({levels})
               AND d.next_attempt_at <= NOW(3) + INTERVAL %(lookahead_seconds)s SECOND
             ORDER BY d.priority, d.next_attempt_at
             LIMIT 1)
ORDER BY t.tenant_id;

-- name: fair_running_counts
-- Jobs running now (parked on a timer or in flight, on any executor) of the capped tenants,
-- counted from the jobs table itself, never a counter that could drift. jobs_dlq_idx
-- (tenant_id, status) reads only the running entries. Run after the tenants' limit rows are
-- locked, so another executor's claim for them has committed (and is counted) or waits for ours.
SELECT tenant_id, COUNT(*)
FROM jobs
WHERE tenant_id IN ({ids})
  AND status = 'running'
GROUP BY tenant_id;

-- name: fair_take_first
-- Tenants whose share is one job: the first due job the walk found for each, locked by its key
-- in jobs_tenant_due_idx (pending_tenant, priority, next_attempt_at, id): point ranges, the same index
-- and order as fair_take, so two claims lock a job's index entry before its row, never the other
-- way round (locking by primary key here deadlocked with the other claim's index scan, measured).
-- The walk read the keys without locks, so each is checked again: another executor may have
-- claimed the job (no longer pending: the key no longer matches; or locked: SKIP LOCKED passes
-- over it). Such a tenant simply gets nothing this round.
SELECT id, tenant_id, task_id, scheduled_at, attempt, fence, max_attempts, next_attempt_at,
       timeout_seconds, backoff_base_seconds, request_method, request_url,
       request_headers, request_body, secret_ref, NOW(3) AS db_now
FROM jobs FORCE INDEX (jobs_tenant_due_idx)
WHERE (pending_tenant, priority, next_attempt_at, id) IN ({rows})
  AND next_attempt_at <= NOW(3) + INTERVAL %(lookahead_seconds)s SECOND
FOR UPDATE SKIP LOCKED;

-- name: fair_take
-- Tenants whose share is more than one job (at most free / 2 of them): one branch per tenant,
-- joined by UNION ALL ({n} is the branch's number), its share in its own priority order from
-- jobs_tenant_due_idx (ranges per due level that end at the lookahead, read in index order: no
-- sort, so only the rows returned are locked). SKIP LOCKED passes over rows another executor
-- is claiming; rows this claim took in an earlier round are already 'running' (marked in the
-- same transaction), since SKIP LOCKED never skips our own locks. The index is forced for the
-- reason given at fair_walk (jobs_claim_idx would read through the other tenants' due jobs).
SELECT id, tenant_id, task_id, scheduled_at, attempt, fence, max_attempts, next_attempt_at,
       timeout_seconds, backoff_base_seconds, request_method, request_url,
       request_headers, request_body, secret_ref, NOW(3) AS db_now
FROM jobs FORCE INDEX (jobs_tenant_due_idx)
WHERE pending_tenant = %(tenant_{n})s
  AND priority IN ({levels})
  AND next_attempt_at <= NOW(3) + INTERVAL %(lookahead_seconds)s SECOND
ORDER BY priority, next_attempt_at
LIMIT %(limit_{n})s
FOR UPDATE SKIP LOCKED;
