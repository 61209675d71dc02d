"""Use cases on a tenant's notification subscription: put (create or replace) and delete."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import transaction

from domain import notification_events
from notifications.models import NotificationSubscription

logger = logging.getLogger(__name__)


class SubscriptionNotFound(Exception):
    """The tenant has no subscription (HTTP 404)."""


def subscription_put(
    *, tenant_id: str, url: str, events: Sequence[str], failing_after: int, enabled: bool
) -> tuple[NotificationSubscription, bool]:
    """Create or replace the tenant's subscription; (the row, whether it was created).

    `url` is checked by the caller (tasks.targets, like a task's); `events` is kept in the
    canonical order of EVENT_TYPES, without duplicates.
    """
    chosen = [kind for kind in notification_events.EVENT_TYPES if kind in set(events)]
    with transaction.atomic():
        # Locked by primary key: a writer emitting events for this tenant reads the old or the new row, whole.
        subscription, created = NotificationSubscription.objects.update_or_create(
            tenant_id=tenant_id,
            defaults={"url": url, "events": chosen, "failing_after": failing_after, "enabled": enabled},
        )
    logger.info(
        "notification subscription saved",
        extra={"event": "notifications_put", "tenant_id": tenant_id, "new": created, "events": chosen},
    )
    return subscription, created


def subscription_delete(*, tenant_id: str) -> None:
    """Delete the tenant's subscription: nothing more is queued for it (queued notifications still go)."""
    deleted, _ = NotificationSubscription.objects.filter(tenant_id=tenant_id).delete()
    if not deleted:
        raise SubscriptionNotFound(tenant_id)
    logger.info("notification subscription deleted", extra={"event": "notifications_delete", "tenant_id": tenant_id})
