"""A tenant's notifications, pure: the event types, each event's dedup key and data, the body sent.

An event becomes a notification job (jobs.queue.notifications) when its tenant subscribed to
its type: a job in the `jobs` table like any call, with the event id as its id, so the
executor's `webhook-id` is the event id, and its task id the tenant's notification channel
(`channel_id`): a task id no task row has, so the job counts as no task's failure, pauses
nothing, and is listed by no task; its history is the tenant's deliveries. A notification
job that dies is no event (`is_notification_job`): a failed notification never notifies.
Neutral (no app imports): the queue writes events, the notifications app reads them.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

JOB_DEAD = "job.dead"
TASK_AUTO_PAUSED = "task.auto_paused"
TASK_COMPLETED = "task.completed"
TASK_FAILING = "task.failing"
EVENT_TYPES = (JOB_DEAD, TASK_AUTO_PAUSED, TASK_COMPLETED, TASK_FAILING)

# task.failing: sent when a task's dead jobs in a row reach this many (the subscription's `failing_after`).
FAILING_AFTER_MIN = 1
FAILING_AFTER_MAX = 100
FAILING_AFTER_DEFAULT = 3

MAX_KEY_LENGTH = 200  # notification_events.event_key

# Fixed: a tenant's channel id must be the same in every process and release.
_CHANNEL_NAMESPACE = uuid.UUID("5f0c6f1e-9a3b-4c2e-8d7a-6b1f2e3d4c5b")


def channel_id(tenant_id: str) -> uuid.UUID:
    """The task id of the tenant's notification jobs (the same for every event: its deliveries' history)."""
    return uuid.uuid5(_CHANNEL_NAMESPACE, tenant_id)


def is_notification_job(*, tenant_id: str, task_id: bytes) -> bool:
    """Whether a job (its task id as stored) is one of the tenant's notifications: it emits no event."""
    return task_id == channel_id(tenant_id).bytes


@dataclass(frozen=True, slots=True)
class Event:
    """Something to tell a tenant; `key` is unique per tenant: the same key twice is one notification."""

    tenant_id: str
    type: str
    key: str
    task_id: uuid.UUID
    data: dict[str, Any] = field(default_factory=dict)


def _id(value: bytes | uuid.UUID) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value))


def job_dead(
    *,
    tenant_id: str,
    task_id: bytes | uuid.UUID,
    job_id: bytes | uuid.UUID,
    attempt: int,
    http_status: int | None,
    error: str | None,
) -> Event:
    """A job ran out of attempts; keyed by its attempt too: a manual retry that dies again is a new event."""
    task, job = _id(task_id), _id(job_id)
    data = {"task_id": str(task), "job_id": str(job), "attempt": attempt, "http_status": http_status, "error": error}
    return Event(tenant_id, JOB_DEAD, f"{JOB_DEAD}:{job}:{attempt}", task, data)


def task_failing(
    *, tenant_id: str, task_id: bytes | uuid.UUID, job_id: bytes | uuid.UUID, consecutive_failures: int
) -> Event:
    """The task's dead jobs in a row reached the subscription's `failing_after` with this job."""
    task, job = _id(task_id), _id(job_id)
    data = {"task_id": str(task), "job_id": str(job), "consecutive_failures": consecutive_failures}
    return Event(tenant_id, TASK_FAILING, f"{TASK_FAILING}:{task}:{job}", task, data)


def task_auto_paused(
    *, tenant_id: str, task_id: bytes | uuid.UUID, job_id: bytes | uuid.UUID, consecutive_failures: int, reason: str
) -> Event:
    """The task paused itself; keyed by the dead job that paused it (one pause, one event)."""
    task, job = _id(task_id), _id(job_id)
    data = {
        "task_id": str(task),
        "job_id": str(job),
        "consecutive_failures": consecutive_failures,
        "paused_reason": reason,
    }
    return Event(tenant_id, TASK_AUTO_PAUSED, f"{TASK_AUTO_PAUSED}:{task}:{job}", task, data)


def task_completed(
    *,
    tenant_id: str,
    task_id: uuid.UUID,
    completed_at: datetime,
    reason: str | None = None,
    runs: int | None = None,
) -> Event:
    """The task will run no more (its ends_at passed or max_runs reached); keyed by when it completed."""
    at = completed_at.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")
    data: dict[str, Any] = {"task_id": str(task_id), "job_id": None, "completed_at": at + "Z"}
    if reason is not None:
        data["reason"] = reason
    if runs is not None:
        data["runs"] = runs
    return Event(tenant_id, TASK_COMPLETED, f"{TASK_COMPLETED}:{task_id}:{at}", task_id, data)


def body(*, event_type: str, event_id: uuid.UUID, created_at: datetime, data: dict[str, Any]) -> str:
    """The JSON the receiver gets: {type, id, created_at, data} (the Standard Webhooks payload shape)."""
    at = created_at.astimezone(UTC) if created_at.tzinfo else created_at.replace(tzinfo=UTC)
    created = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps(
        {"type": event_type, "id": str(event_id), "created_at": created, "data": data}, separators=(",", ":")
    )
