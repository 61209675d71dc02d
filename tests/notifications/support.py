"""Shared builders for the notification tests: a subscription, a running job, its dead result."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.utils import timezone

from domain import notification_events as events
from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome
from notifications.models import NotificationSubscription
from tasks.models import Task
from tests.factories import make_job

WORKER = "w-notify"


def subscribe(tenant_id: str, url: str = "https://example.com/notify", **fields: Any) -> NotificationSubscription:
    """A saved subscription (every event type unless `events=` says otherwise)."""
    values: dict[str, Any] = {"events": list(events.EVENT_TYPES), "failing_after": 3, "enabled": True, **fields}
    return NotificationSubscription.objects.create(tenant_id=tenant_id, url=url, **values)


def running_job(task: Task, *, attempt: int = 1, **overrides: Any) -> Job:
    """A job of `task` claimed by WORKER (fence = attempt), its lease running."""
    scheduled_at = overrides.pop("scheduled_at", timezone.now() - timedelta(seconds=5))
    return make_job(
        task,
        status=JobStatus.RUNNING,
        worker_id=WORKER,
        attempt=attempt,
        scheduled_at=scheduled_at,
        lease_expires_at=timezone.now() + timedelta(minutes=5),
        **overrides,
    )


def dead(job: Job, http_status: int = 500) -> JobResult:
    return JobResult(job.id, job.fence, job.attempt, Outcome.DEAD, http_status=http_status, error=f"HTTP {http_status}")


def succeeded(job: Job) -> JobResult:
    return JobResult(job.id, job.fence, job.attempt, Outcome.SUCCEEDED, http_status=200)


def notification_jobs(tenant_id: str) -> list[Job]:
    """The tenant's notification jobs, oldest first."""
    return list(Job.objects.filter(tenant_id=tenant_id, task_id=events.channel_id(tenant_id)).order_by("scheduled_at"))


def sent(tenant_id: str) -> list[tuple[str, dict]]:
    """(type, data) of each of the tenant's notification jobs, oldest first."""
    bodies = [json.loads(job.request_body) for job in notification_jobs(tenant_id)]
    return [(body["type"], body["data"]) for body in bodies]
