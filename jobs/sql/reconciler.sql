-- The reconciler: the other half of the lease.

-- name: reconcile_expired_leases
-- A running job whose lease ran out (its executor died or hung) goes back to the
-- queue, or to the DLQ when its budget is spent. It never adds an attempt: the claim
-- already counted this one, so a job never runs more than max_attempts times. It
-- goes back due now because it is already late. The guard is re-evaluated on the
-- latest committed row (a current read), so a result that landed first wins and
-- this no longer matches; LIMIT keeps one sweep after an outage from locking the
-- whole table (the caller repeats while a sweep fills it).
-- A job of a task paused or deleted meanwhile is cancelled instead of going back (the task
-- fires nothing), and a deleted task's job does not stay dead (out of the DLQ): the same rule
-- as the result write. The task's status is read by a subquery (a multi-table UPDATE cannot
-- take LIMIT); a job without a task row (tests, benches) counts as active.
-- The attempt taken back gets its entry in the attempt log, in the same statement (the result
-- write's entry, jobs/sql/executor.sql result_write): status is what the job became, error
-- 'lease expired', no duration or HTTP status (no result came back); started_at is when the call
-- was due to begin (the job waited on its executor's timer until next_attempt_at). A
-- single-table UPDATE assigns left to right (sql_mode has no SIMULTANEOUS_ASSIGNMENT), so the
-- entry reads the new status and the old next_attempt_at: keep `attempts` between the two.
-- Not a hot path: the JSON functions keep the last 20 entries exactly.
UPDATE jobs
SET status = CASE
        WHEN (SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id) = 'deleted' THEN 'cancelled'
        WHEN attempt >= max_attempts THEN 'dead'
        WHEN COALESCE((SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id), 'active') <> 'active'
            THEN 'cancelled'
        ELSE 'pending'
    END,
    attempts = JSON_ARRAY_APPEND(
        IF(JSON_LENGTH(COALESCE(attempts, '[]')) >= 20, JSON_REMOVE(attempts, '$[0]'), COALESCE(attempts, '[]')),
        '$',
        JSON_OBJECT(
            'attempt', attempt,
            'claimed_at', started_at,
            'started_at', GREATEST(next_attempt_at, COALESCE(started_at, next_attempt_at)),
            'finished_at', NOW(3),
            'duration_ms', NULL,
            'status', status,
            'http_status', NULL,
            'error', 'lease expired'
        )
    ),
    next_attempt_at = NOW(3),
    finished_at = IF(
        attempt >= max_attempts
            OR COALESCE((SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id), 'active') <> 'active',
        NOW(3),
        NULL
    ),
    error = 'lease expired',
    http_status = NULL,
    response_body = NULL,
    worker_id = NULL,
    lease_expires_at = NULL,
    updated_at = NOW(3)
WHERE status = 'running'
  AND lease_expires_at < NOW(3)
LIMIT %(limit)s;
