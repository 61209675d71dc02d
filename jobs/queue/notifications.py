"""Notifications to tenants: each event written as a notification job, in the transaction of its transition.

"Through the same queue": a notification is a job (its id the event id, its task id the tenant's
channel: domain.notification_events), so the executors call it with their guarantees (claim
before call, the fence, retries with its own budget: NOTIFICATION_* settings) and sign it like any
call (webhook-id = the job id = the event id). An event is never lost: its job commits with the
transition or not at all. Callers:

- the result write and the lease sweep: `emit_after_attempts` (job.dead, task.failing,
  task.auto_paused), after their jobs' UPDATE;
- a task completing (the scheduler): `emit` with a `task.completed` event (notifications.events).

A dead notification job is no event (`is_notification_job`), so a failed notification never
notifies; its failures count against no task (no task row has its task id).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection, transaction

from domain import notification_events as events
from domain.ids import new_id
from jobs.queue.statements import STATEMENTS
from tasks import run_health
from tasks.priority import DEFAULT_PRIORITY

logger = logging.getLogger(__name__)

# The JSON document `notify_insert_jobs` reads: one row per event.
JOB_COLUMNS = (
    "id",
    "tenant_id",
    "task_id",
    "seq",
    "max_attempts",
    "timeout_seconds",
    "backoff_base_seconds",
    "url",
    "body",
)
EVENT_COLUMNS = ("id", "tenant_id", "event_type", "event_key", "task_id", "created_at")


@dataclass(frozen=True, slots=True)
class Subscription:
    url: str
    events: frozenset[str]
    failing_after: int
    now: datetime  # the database's clock when it was read (the events' created_at)


@dataclass(frozen=True, slots=True)
class Death:
    """A job this write made dead (the job.dead event's facts)."""

    tenant_id: str
    task_id: bytes
    job_id: bytes
    attempt: int
    http_status: int | None
    error: str | None


def lock_subscriptions(cursor, tenant_ids: Iterable[str]) -> dict[str, Subscription]:
    """The enabled subscriptions of `tenant_ids`, locked until the caller's commit."""
    ids = [(tenant,) for tenant in sorted(set(tenant_ids))]
    if not ids:
        return {}
    cursor.execute(STATEMENTS["notify_lock_subscriptions"].render(connection.connection, None, ids))
    found = {}
    for tenant_id, url, kinds, failing_after, now in cursor.fetchall():
        chosen = json.loads(kinds) if isinstance(kinds, str | bytes) else kinds
        found[tenant_id] = Subscription(url, frozenset(chosen), failing_after, now.replace(tzinfo=UTC))
    return found


def write_events(cursor, found: Sequence[events.Event], subscriptions: dict[str, Subscription]) -> int:
    """Write the events whose tenant subscribed to their type; the notification jobs made (dedup drops the rest)."""
    chosen = [
        event
        for event in found
        if (subscription := subscriptions.get(event.tenant_id)) is not None and event.type in subscription.events
    ]
    if not chosen:
        return 0
    db = connection.connection
    event_rows, job_rows = [], []
    for seq, event in enumerate(chosen):
        subscription = subscriptions[event.tenant_id]
        event_id = new_id()
        channel = events.channel_id(event.tenant_id)
        naive_now = subscription.now.replace(tzinfo=None)
        event_rows.append((event_id.bytes, event.tenant_id, event.type, event.key, event.task_id.bytes, naive_now))
        body = events.body(event_type=event.type, event_id=event_id, created_at=subscription.now, data=event.data)
        job_rows.append(
            (
                event_id.bytes,
                event.tenant_id,
                channel.bytes,
                seq,
                settings.NOTIFICATION_MAX_ATTEMPTS,
                settings.NOTIFICATION_TIMEOUT_SECONDS,
                settings.NOTIFICATION_BACKOFF_BASE_SECONDS,
                subscription.url,
                body,
            )
        )
    cursor.execute(STATEMENTS["notify_insert_events"].render(db, None, event_rows, columns=EVENT_COLUMNS))
    statement = STATEMENTS["notify_insert_jobs"]
    cursor.execute(statement.render(db, {"priority": DEFAULT_PRIORITY}, job_rows, columns=JOB_COLUMNS))
    made = cursor.rowcount
    logger.info(
        "notifications queued",
        extra={"event": "notifications_queued", "events": len(chosen), "queued": made},
    )
    return made


def emit(*, found: Sequence[events.Event]) -> int:
    """Write `found` as notifications in the caller's transaction (or one of its own); how many were new."""
    if not found:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        subscriptions = lock_subscriptions(cursor, (event.tenant_id for event in found))
        return write_events(cursor, found, subscriptions) if subscriptions else 0


def task_completed(
    *, tenant_id: str, task_id: uuid.UUID, completed_at: datetime, reason: str | None = None, runs: int | None = None
) -> bool:
    """Tell the tenant its task completed (ends_at passed, max_runs reached); True when a notification was queued.

    Call it inside the transaction that marks the task completed: the notification commits with
    the transition or not at all. The same (task, completed_at) twice is one notification; a
    tenant without a subscription to task.completed gets none (one primary-key read, nothing
    written). For many tasks at once, build the events (domain.notification_events.task_completed)
    and `emit` them together: three statements for the lot.
    """
    event = events.task_completed(
        tenant_id=tenant_id, task_id=task_id, completed_at=completed_at, reason=reason, runs=runs
    )
    return emit(found=[event]) == 1


def emit_after_attempts(
    cursor,
    *,
    deaths: Sequence[Death],
    attempts: Sequence[tuple[bytes, str, run_health.Attempt]],
    prior: dict[bytes, tuple[str, int]],
    paused: Sequence[tuple[str, uuid.UUID]],
) -> int:
    """job.dead, task.failing and task.auto_paused of one write, in its transaction, after its jobs' UPDATE.

    `attempts` are the write's task attempts in order, `prior` each task's (status, dead jobs in a
    row) before them (jobs.queue.task_health), `paused` the tasks the write paused. Every event
    follows a dead job, so a write without one runs no statement here.
    """
    deaths = [d for d in deaths if not events.is_notification_job(tenant_id=d.tenant_id, task_id=d.task_id)]
    if not deaths:
        return 0
    subscriptions = lock_subscriptions(cursor, (death.tenant_id for death in deaths))
    if not subscriptions:
        return 0
    found: list[events.Event] = []
    for death in deaths:
        status = prior.get(death.task_id, ("active", 0))[0]
        if death.tenant_id in subscriptions and status != "deleted":  # a deleted task's dead job is cancelled
            found.append(
                events.job_dead(
                    tenant_id=death.tenant_id,
                    task_id=death.task_id,
                    job_id=death.job_id,
                    attempt=death.attempt,
                    http_status=death.http_status,
                    error=death.error,
                )
            )
    found.extend(_health_events(attempts, prior, set(paused), subscriptions))
    return write_events(cursor, found, subscriptions)


def _health_events(
    attempts: Sequence[tuple[bytes, str, run_health.Attempt]],
    prior: dict[bytes, tuple[str, int]],
    paused: set[tuple[str, uuid.UUID]],
    subscriptions: dict[str, Subscription],
) -> list[events.Event]:
    """task.failing where a task's dead jobs in a row reach `failing_after`, task.auto_paused where it paused."""
    by_task: dict[bytes, list[run_health.Attempt]] = {}
    tenants: dict[bytes, str] = {}
    for task_id, tenant_id, attempt in attempts:
        if tenant_id in subscriptions and task_id in prior:
            by_task.setdefault(task_id, []).append(attempt)
            tenants[task_id] = tenant_id
    found = []
    for task_id, task_attempts in by_task.items():
        tenant_id = tenants[task_id]
        subscription = subscriptions[tenant_id]
        status, count = prior[task_id]
        if status == "deleted":
            continue
        last_dead = None
        # The count as tasks.run_health.next_health keeps it: a success resets it, a dead job adds one.
        for attempt in task_attempts:
            if attempt.outcome == run_health.SUCCEEDED:
                count = 0
            elif attempt.outcome == run_health.DEAD:
                count += 1
                last_dead = attempt.job_id
                if count == subscription.failing_after:
                    found.append(
                        events.task_failing(
                            tenant_id=tenant_id, task_id=task_id, job_id=attempt.job_id, consecutive_failures=count
                        )
                    )
        if last_dead is not None and (tenant_id, uuid.UUID(bytes=task_id)) in paused:
            found.append(
                events.task_auto_paused(
                    tenant_id=tenant_id,
                    task_id=task_id,
                    job_id=last_dead,
                    consecutive_failures=count,
                    reason=run_health.auto_pause_reason(count),
                )
            )
    return found


def purge_expired_events(*, retention_seconds: int, limit: int) -> int:
    """Delete up to `limit` events older than the retention, oldest first; how many were deleted (the archiver's)."""
    params = {"retention_seconds": retention_seconds, "limit": limit}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["purge_expired_notification_events"].bind(params))
        return cursor.rowcount
