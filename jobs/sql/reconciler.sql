-- The reconciler: the other half of the lease.

-- name: reconcile_find_expired
-- A running job whose lease ran out (its executor died or hung) is taken back by the three
-- statements of one sweep, one transaction (jobs.queue.leases): this one finds up to `limit` of
-- them, reconcile_lock_expired locks them, reconcile_expired_leases changes exactly those rows;
-- between the last two the sweep writes their tasks' health (jobs.queue.task_health: the tasks
-- are locked after the jobs, in id order, as the executor's result write does). No lock here:
-- the running jobs' range of jobs_archiver_idx (status, finished_at), each job's lease read from
-- its row, in index order (no sort: it stops at `limit` expired leases; reconcile_lock_expired
-- orders each sweep's rows by lease). The range holds every running job, parked or in flight, so
-- the executors' slots bound it (it had an index of its own, (status, lease_expires_at), which
-- every claim and every result rewrote: about 9 us of the server's CPU per job each time; with
-- ORDER BY lease a find read and sorted every running row: 224 ms with 53,600 running, measured).
-- A locking read of the lease range also locked the index entry past its end, the running job due
-- next, and kept it while the sweep waited for a task; an executor writing that job's result
-- and holding the task then waited for the entry: a deadlock, measured in 3 runs of 6 of
-- test_a_sweep_and_a_result_batch_over_the_same_tasks_both_land_without_a_deadlock. LIMIT keeps
-- one sweep after an outage from locking the whole table (the caller repeats while a sweep fills it).
SELECT id
FROM jobs FORCE INDEX (jobs_archiver_idx)
WHERE status = 'running'
  AND lease_expires_at < NOW(3)
LIMIT %(limit)s;

-- name: reconcile_lock_expired
-- The rows found above, locked by primary key only (point reads: no other index entry is locked),
-- with what the task health write needs, oldest lease first (the order a task's attempts are
-- counted in). The guard is a current read on the locked row: a result that landed since the
-- read above wins and the row no longer matches. SKIP LOCKED passes over a row an executor is
-- writing the result of right now (its result wins, or the next sweep takes it) and over another
-- replica's sweep, so replicas sweep disjoint sets and a sweep never waits on a job row.
SELECT id, attempt, max_attempts, task_id, scheduled_at, tenant_id, fence
FROM jobs FORCE INDEX (PRIMARY)
WHERE id IN ({ids})
  AND status = 'running'
  AND lease_expires_at < NOW(3)
ORDER BY lease_expires_at, id
FOR UPDATE SKIP LOCKED;

-- name: reconcile_expired_leases
-- The rows locked above, (id, fence) as read, behind the same guard: they are locked by this
-- transaction, so each one changes (the caller checks the count). A job goes back to the
-- queue, or to the DLQ when its budget is spent. It never adds an attempt: the claim
-- already counted this one, so a job never runs more than max_attempts times. It
-- goes back due now because it is already late.
-- A job of a task paused or deleted meanwhile is cancelled instead of going back (the task
-- fires nothing), and a deleted task's job does not stay dead (out of the DLQ): the same rule
-- as the result write. The task's status is read by a subquery (the multi-table form would
-- assign in any order, see below); the task rows are locked by this transaction and their
-- health already written, so a task this sweep paused automatically cancels its retries here.
-- A job without a task row (tests, benches) counts as active.
-- The attempt taken back gets its entry in the attempt log, in the same statement (the result
-- write's compact entry, jobs/sql/executor.sql result_write): status is what the job became, error
-- 'lease expired', no HTTP status (no result came back); its duration runs from when the call
-- was due to begin (the job waited on its executor's timer until next_attempt_at) to now. A
-- single-table UPDATE assigns left to right (sql_mode has no SIMULTANEOUS_ASSIGNMENT), so the
-- entry reads the new status and the old next_attempt_at: keep `attempts` between the two.
-- Not a hot path: the JSON functions keep the last 20 entries exactly. The primary key is forced:
-- without it MariaDB 10.11 read the guard's range of the lease index it had then (every expired lease,
-- 'Using buffer') to find the 1,000 tuples (EXPLAIN, 36,000 jobs); with it, 1,000 key lookups.
UPDATE jobs FORCE INDEX (PRIMARY)
SET status = CASE
        WHEN (SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id) = 'deleted' THEN 'cancelled'
        WHEN attempt >= max_attempts THEN 'dead'
        WHEN COALESCE((SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id), 'active') NOT IN ('active', 'completed')
            THEN 'cancelled'
        ELSE 'pending'
    END,
    attempts = JSON_ARRAY_APPEND(
        IF(JSON_LENGTH(COALESCE(attempts, '[]')) >= 20, JSON_REMOVE(attempts, '$[0]'), COALESCE(attempts, '[]')),
        '$',
        JSON_ARRAY(
            attempt,
            TIMESTAMPDIFF(MICROSECOND, TIMESTAMP'1970-01-01 00:00:00', NOW(3)) DIV 1000,
            TIMESTAMPDIFF(MICROSECOND, GREATEST(next_attempt_at, COALESCE(started_at, next_attempt_at)), NOW(3)) DIV 1000,
            status,
            NULL,
            'lease expired'
        )
    ),
    next_attempt_at = NOW(3),
    finished_at = IF(
        attempt >= max_attempts
            OR COALESCE((SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id), 'active') NOT IN ('active', 'completed'),
        NOW(3),
        NULL
    ),
    error = 'lease expired',
    http_status = NULL,
    response_body = NULL,
    worker_id = NULL,
    lease_expires_at = NULL,
    updated_at = NOW(3)
WHERE (id, fence) IN ({rows})
  AND status = 'running'
  AND lease_expires_at < NOW(3);
