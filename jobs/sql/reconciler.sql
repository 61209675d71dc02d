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
UPDATE jobs
SET status = CASE
        WHEN (SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id) = 'deleted' THEN 'cancelled'
        WHEN attempt >= max_attempts THEN 'dead'
        WHEN COALESCE((SELECT t.status FROM tasks AS t WHERE t.id = jobs.task_id), 'active') <> 'active'
            THEN 'cancelled'
        ELSE 'pending'
    END,
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
