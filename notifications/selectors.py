"""Reads for the notification API: the subscription, and its deliveries (the notification jobs' history)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from domain import notification_events
from domain.records import Position
from history.base import HistoryStore
from jobs import selectors as job_selectors
from notifications.models import NotificationEvent, NotificationSubscription


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notification as the tenant sees it: the event and how its call went."""

    event_id: uuid.UUID
    event_type: str | None  # None only once the event's row is gone
    task_id: uuid.UUID | None  # the task the event is about
    status: str
    attempts: int
    http_status: int | None
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    next_attempt_at: datetime | None


def subscription_get(*, tenant_id: str) -> NotificationSubscription | None:
    return NotificationSubscription.objects.filter(tenant_id=tenant_id).first()


def deliveries_page(
    *, tenant_id: str, before: Position | None, limit: int, store: HistoryStore
) -> tuple[list[Delivery], Position | None]:
    """A page of the tenant's deliveries, newest first: its channel's jobs from the queue and the history.

    A notification job's task id is the tenant's channel (domain.notification_events), so its
    deliveries are that "task's" history (jobs.selectors.task_history, both stores, the same
    cursor), and each one's event type comes from its event row (one read per page).
    """
    channel = notification_events.channel_id(tenant_id)
    jobs, next_position = job_selectors.task_history(
        tenant_id=tenant_id, task_id=channel, before=before, limit=limit, store=store
    )
    rows = NotificationEvent.objects.filter(tenant_id=tenant_id, id__in=[job.id for job in jobs]).values_list(
        "id", "event_type", "task_id"
    )
    described = {event_id: (kind, task_id) for event_id, kind, task_id in rows}
    page = []
    for job in jobs:
        kind, task_id = described.get(job.id, (None, None))
        page.append(
            Delivery(
                event_id=job.id,
                event_type=kind,
                task_id=task_id,
                status=job.status,
                attempts=job.attempt,
                http_status=job.http_status,
                error=job.error,
                created_at=job.scheduled_at,
                finished_at=job.finished_at,
                next_attempt_at=job.next_attempt_at,
            )
        )
    return page, next_position
