-- Notifications to tenants (jobs/queue/notifications.py): an event becomes a notification job in the
-- transaction of the transition that caused it (a result write, a lease sweep, a task completing).
-- Three statements, run only when a write has an event (a dead job, a task completing): a write
-- of successes and retries runs none of them, and a dead job of a tenant without a subscription
-- only the first.

-- name: notify_lock_subscriptions
-- The enabled subscriptions of the event's tenants, by primary key, locked: two writers emitting
-- for one tenant queue here (after their jobs and tasks, which every writer locks first, so no
-- cycle), which orders their notification jobs' scheduled_at (below). READ COMMITTED: a tenant
-- without a row locks nothing. NOW(6) is the events' created_at (the database's clock).
SELECT tenant_id, url, events, failing_after, NOW(6)
FROM notification_subscriptions
WHERE tenant_id IN ({ids})
  AND enabled
FOR UPDATE;

-- name: notify_insert_events
-- The dedup ledger: UNIQUE (tenant_id, event_key) keeps the first row of an event; the same
-- event again changes nothing (not INSERT IGNORE, which would also hide a value that does not fit).
INSERT INTO notification_events (id, tenant_id, event_type, event_key, task_id, created_at)
VALUES {rows}
ON DUPLICATE KEY UPDATE id = id;

-- name: notify_insert_jobs
-- One notification job per event row this write inserted, with its id (the webhook-id), found by
-- primary key: an event already sent kept its first row, whose id is not this one, so it makes no
-- job. The task id is the tenant's notification channel (domain.notification_events.channel_id): no
-- task row has it, so the result write counts its failures against no task and pauses nothing.
-- scheduled_at is this statement's NOW(6) plus the event's place in the write (microseconds), unique
-- under jobs_task_scheduled_uniq: another writer for the tenant waited at notify_lock_subscriptions
-- for this transaction's commit, so its NOW(6) is later than every value written here.
INSERT INTO jobs (id, task_id, tenant_id, scheduled_at, next_attempt_at, status, priority, attempt,
                  max_attempts, timeout_seconds, backoff_base_seconds,
                  request_method, request_url, request_headers, request_body, secret_ref, updated_at)
SELECT UNHEX(r.id), UNHEX(r.task_id), r.tenant_id, NOW(6) + INTERVAL r.seq MICROSECOND, NOW(6), 'pending',
       %(priority)s, 0, r.max_attempts, r.timeout_seconds, r.backoff_base_seconds,
       'POST', r.url, '{"Content-Type": "application/json"}', r.body, NULL, NOW(6)
FROM JSON_TABLE({json}, '$[*]' COLUMNS (
    id CHAR(32) PATH '$[0]', tenant_id TEXT PATH '$[1]', task_id CHAR(32) PATH '$[2]', seq BIGINT PATH '$[3]',
    max_attempts BIGINT PATH '$[4]', timeout_seconds BIGINT PATH '$[5]', backoff_base_seconds BIGINT PATH '$[6]',
    url TEXT PATH '$[7]', body LONGTEXT PATH '$[8]'
)) AS r
STRAIGHT_JOIN notification_events AS e FORCE INDEX (PRIMARY) ON e.id = UNHEX(r.id);

-- name: purge_expired_notification_events
-- The archiver's bounded purge: events older than the history keeps their notification jobs
-- (HISTORY_TTL_SECONDS: a delivery without its job shows nothing), oldest first through
-- notif_events_created_idx, at most `limit` rows a statement (short locks, a backlog drains over steps).
DELETE FROM notification_events
WHERE created_at < NOW(6) - INTERVAL %(retention_seconds)s SECOND
ORDER BY created_at
LIMIT %(limit)s;
