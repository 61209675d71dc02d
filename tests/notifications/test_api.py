"""PUT/GET/DELETE /v1/notifications and GET /v1/notifications/deliveries: one subscription per tenant, tenants apart."""

from __future__ import annotations

import json

import pytest

from domain import notification_events as events
from notifications.models import NotificationSubscription

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]
URL = "/v1/notifications"


def body(**overrides):
    return {"url": "https://example.com/notify", "events": ["job.dead", "task.failing"], **overrides}


def test_put_creates_then_replaces_the_one_subscription_and_get_reads_it(owner):
    created = owner.put(URL, body(), format="json")
    assert created.status_code == 201, created.content
    shown = created.json()
    assert shown["url"] == "https://example.com/notify"
    assert shown["events"] == ["job.dead", "task.failing"]
    assert shown["failing_after"] == events.FAILING_AFTER_DEFAULT and shown["enabled"] is True
    replaced = owner.put(URL, body(events=["task.completed"], failing_after=7, enabled=False), format="json")
    assert replaced.status_code == 200, replaced.content
    read = owner.get(URL)
    assert read.status_code == 200
    assert read.json() == replaced.json()
    assert read.json()["events"] == ["task.completed"] and read.json()["failing_after"] == 7
    assert read.json()["enabled"] is False
    assert NotificationSubscription.objects.count() == 1


def test_events_are_kept_in_their_canonical_order_without_duplicates(owner):
    response = owner.put(URL, body(events=["task.failing", "job.dead", "task.failing"]), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["events"] == ["job.dead", "task.failing"]


def test_delete_removes_it_and_then_get_and_delete_are_404s(owner):
    owner.put(URL, body(), format="json")
    assert owner.delete(URL).status_code == 204
    missing = owner.get(URL)
    assert missing.status_code == 404 and missing["Content-Type"] == "application/problem+json"
    assert owner.delete(URL).status_code == 404


def test_another_tenant_neither_sees_nor_changes_the_owners_subscription(owner, other_tenant):
    owner.put(URL, body(), format="json")
    assert other_tenant.get(URL).status_code == 404
    assert other_tenant.delete(URL).status_code == 404
    other_tenant.put(URL, body(url="https://api.example.org/other", events=["task.completed"]), format="json")
    assert owner.get(URL).json()["url"] == "https://example.com/notify"
    assert other_tenant.get(URL).json()["url"] == "https://api.example.org/other"
    assert other_tenant.get(URL + "/deliveries").json()["results"] == []


def test_a_caller_without_a_token_is_a_401(stranger):
    assert stranger.get(URL).status_code == 401
    assert stranger.put(URL, body(), format="json").status_code == 401
    assert stranger.get(URL + "/deliveries").status_code == 401


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"events": ["job.dead"]}, "url"),
        (body(url=""), "url"),
        (body(url=42), "url"),
        (body(url="ftp://example.com/x"), "url"),
        (body(url="https://internal.example.net/hook"), "url"),  # a private address: the egress policy
        (body(url="https://rebind.example.net/hook"), "url"),  # one of its addresses is loopback: the DNS check
        (body(url="https://metadata.example.net/hook"), "url"),
        (body(url="http://127.0.0.1:1/hook"), "url"),
        (body(url="https://example.com/" + "x" * 2100), "url"),
        ({"url": "https://example.com/notify"}, "events"),
        (body(events=[]), "events"),
        (body(events="job.dead"), "events"),
        (body(events=["job.dead", "job.exploded"]), "events"),
        (body(events=[1]), "events"),
        (body(failing_after=0), "failing_after"),
        (body(failing_after=101), "failing_after"),
        (body(failing_after="3"), "failing_after"),
        (body(failing_after=2.5), "failing_after"),
        (body(enabled="yes"), "enabled"),
        (body(tenant_id="tenant-b"), "tenant_id"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_written(owner, data, field):
    response = owner.put(URL, json.dumps(data), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    # A list's bad item is named by its place (events.1).
    assert any(name == field or name.startswith(field + ".") for name in problem["errors"]), problem
    assert not NotificationSubscription.objects.exists()


def test_a_body_that_is_not_an_object_is_a_400(owner):
    response = owner.put(URL, json.dumps(["job.dead"]), content_type="application/json")
    assert response.status_code == 400


def test_deliveries_bad_cursor_and_limit_are_400s_naming_the_parameter(owner):
    bad_cursor = owner.get(URL + "/deliveries?cursor=not-a-cursor")
    assert bad_cursor.status_code == 400 and "cursor" in bad_cursor.json()["errors"]
    bad_limit = owner.get(URL + "/deliveries?limit=0")
    assert bad_limit.status_code == 400 and "limit" in bad_limit.json()["errors"]
