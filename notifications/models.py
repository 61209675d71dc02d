"""A tenant's notification subscription, and the events sent to it (the dedup ledger and the deliveries' types).

An event is written, with the transition that caused it, by jobs.queue.notifications: one
`NotificationEvent` row and one notification job with the same id (its `webhook-id`); the
job's progress (attempts, status, last HTTP status) is the delivery, read from the queue and
then the history (notifications.selectors). The unique (tenant, event_key) makes the same event
twice one notification. Every statement on these tables from the queue is in jobs/sql/notifications.sql.
"""

from __future__ import annotations

from django.db import models

from domain import notification_events
from domain.ids import BinaryUUIDField, new_id
from domain.tenants import ExactCharField, TenantIdField


class NotificationSubscription(models.Model):
    """The tenant's one subscription: where to send which events (`PUT /v1/notifications`)."""

    tenant_id = TenantIdField(primary_key=True)
    url = models.CharField(max_length=2048)  # checked like a task's http.url (tasks.targets)
    events = models.JSONField(default=list)  # a non-empty subset of domain.notification_events.EVENT_TYPES
    failing_after = models.PositiveSmallIntegerField(default=notification_events.FAILING_AFTER_DEFAULT)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "notification_subscriptions"

    def __str__(self) -> str:
        return f"notifications of {self.tenant_id}"


class NotificationEvent(models.Model):
    """One event sent to a tenant; its id is its notification job's id (and the body's `id`)."""

    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)
    tenant_id = TenantIdField()
    event_type = models.CharField(max_length=32)
    event_key = ExactCharField(max_length=notification_events.MAX_KEY_LENGTH)
    task_id = BinaryUUIDField()  # the task the event is about
    created_at = models.DateTimeField()  # the database's clock, at the transition

    class Meta:
        db_table = "notification_events"
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "event_key"], name="notif_events_key_uniq"),
        ]
        indexes = [models.Index(fields=["created_at"], name="notif_events_created_idx")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.id}"
