"""Notification subscriptions and deliveries in the console: listed for support, read-only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from jobs.queue import record_results
from notifications.models import NotificationEvent, NotificationSubscription
from tests.factories import make_task
from tests.notifications.support import WORKER, dead, running_job, subscribe
from tests.tenants import OTHER_TENANT, OWNER

pytestmark = pytest.mark.django_db(transaction=True)

SUBSCRIPTIONS = reverse("admin:notifications_notificationsubscription_changelist")
DELIVERIES = reverse("admin:notifications_notificationevent_changelist")


def test_support_sees_subscriptions_and_deliveries_with_their_state(support_user, client_as):
    subscribe(OWNER, url="https://example.com/owner-hook")
    subscribe(OTHER_TENANT, url="https://example.com/other-hook")
    record_results(worker_id=WORKER, results=[dead(running_job(make_task(auto_pause_after=0)))])
    client = client_as(support_user)

    listed = client.get(SUBSCRIPTIONS)
    assert listed.status_code == 200
    assert {row.tenant_id for row in listed.context["cl"].result_list} == {OWNER, OTHER_TENANT}
    found = client.get(SUBSCRIPTIONS, {"q": OTHER_TENANT})
    assert [row.tenant_id for row in found.context["cl"].result_list] == [OTHER_TENANT]

    deliveries = client.get(DELIVERIES)
    assert deliveries.status_code == 200
    [event] = deliveries.context["cl"].result_list
    assert event.event_type == "job.dead" and event.tenant_id == OWNER
    assert "pending, 0 attempt(s), HTTP -" in deliveries.content.decode()


def test_nothing_can_be_added_changed_or_deleted_from_the_console(support_user, client_as):
    subscription = subscribe(OWNER)
    client = client_as(support_user)
    change = reverse("admin:notifications_notificationsubscription_change", args=[subscription.pk])
    assert client.post(change, {"url": "https://example.com/x", "events": "[]"}).status_code == 403
    assert client.get(reverse("admin:notifications_notificationsubscription_add")).status_code == 403
    delete = reverse("admin:notifications_notificationsubscription_delete", args=[subscription.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert NotificationSubscription.objects.get().url == "https://example.com/notify"
    assert not NotificationEvent.objects.exists()
