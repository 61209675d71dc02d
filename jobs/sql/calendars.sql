-- Calendars (tasks.calendars) as the queue's inserts see them: a run on a date a calendar of its task
-- holds is inserted `skipped`, its reason in `error` (tasks.calendars.rules.skip_reason, the same test as
-- tasks.calendars.rules.covering). Included by scheduler_insert_jobs and backfill_insert_jobs.

-- name: calendar_skip_reason
-- A template over `t` (the task row) and `due.scheduled_at` (the run): 'calendar:<name>' of the first
-- calendar in the task's order holding the run, or NULL. A task without calendars has
-- exclude_calendars NULL and costs only that test (CASE evaluates no other branch). Otherwise, per
-- calendar of the task (task_calendars_uniq (task_id, ...), calendars_tenant_name_uniq): the span
-- starting last at or before the run, ONE entry of calendar_spans_probe_idx (calendar_id,
-- starts_at) read backwards (the spans are disjoint), holds the run when it ends after it. The
-- calendars are read at insert time: an edit committed before the tick applies to its runs. Every
-- join carries tenant_id, the sharding column of all three tables (sharding.vschema). Under READ
-- COMMITTED the INSERT ... SELECT reads them without locks: a calendar PUT never waits for a tick.
(CASE WHEN t.exclude_calendars IS NULL THEN NULL ELSE (
  SELECT CONCAT('calendar:', c.name)
  FROM task_calendars AS tc
  JOIN calendars AS c ON c.tenant_id = tc.tenant_id AND c.name = tc.calendar_name
  WHERE tc.task_id = t.id AND tc.tenant_id = t.tenant_id
    AND (SELECT s.ends_at FROM calendar_spans AS s
         WHERE s.calendar_id = c.id AND s.tenant_id = c.tenant_id AND s.starts_at <= due.scheduled_at
         ORDER BY s.starts_at DESC LIMIT 1) > due.scheduled_at
  ORDER BY tc.position
  LIMIT 1) END)
