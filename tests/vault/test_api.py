"""The secrets API: write-only values, names and times to read, every read scoped by tenant."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.factories import make_task
from vault import services
from vault.models import TenantSecret

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

SECRETS = "/v1/secrets"
TASK = {"name": "n", "schedule": {"cron": "0 9 * * *"}, "http": {"url": "https://example.com/hook"}}


def test_put_creates_then_replaces_and_never_answers_the_value(tenant_client):
    client = tenant_client("tenant-a")
    created = client.put(f"{SECRETS}/hook-token", {"value": "Bearer first-value"}, format="json")
    assert created.status_code == 201, created.content
    assert set(created.json()) == {"name", "version", "created_at", "updated_at"}
    assert created.json()["version"] == 1
    replaced = client.put(f"{SECRETS}/hook-token", {"value": "Bearer second-value"}, format="json")
    assert replaced.status_code == 200
    assert replaced.json()["version"] == 2
    listed = client.get(SECRETS)
    assert listed.status_code == 200
    assert [s["name"] for s in listed.json()["results"]] == ["hook-token"]
    one = client.get(f"{SECRETS}/hook-token")
    assert one.json()["version"] == 2
    for response in (created, replaced, listed, one):
        assert b"value" not in response.content


def test_the_value_is_encrypted_at_rest():
    services.secret_put(tenant_id="tenant-a", name="tok", value="Bearer plain-text-value")
    with connection.cursor() as cursor:
        cursor.execute("SELECT ciphertext FROM tenant_secrets")
        (stored,) = cursor.fetchone()
    assert "plain-text-value" not in stored
    assert stored.startswith("gAAAAA")  # a Fernet token


def test_another_tenants_secret_is_the_same_404_as_a_missing_one(tenant_client):
    tenant_client("tenant-b").put(f"{SECRETS}/b-token", {"value": "Bearer of-b"}, format="json")
    client = tenant_client("tenant-a")
    foreign, missing = client.get(f"{SECRETS}/b-token"), client.get(f"{SECRETS}/nothing")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json()["detail"] == missing.json()["detail"]
    assert client.get(SECRETS).json() == {"results": []}
    assert client.delete(f"{SECRETS}/b-token").status_code == 404
    assert TenantSecret.objects.filter(tenant_id="tenant-b").count() == 1
    # The same name is a separate secret per tenant.
    assert client.put(f"{SECRETS}/b-token", {"value": "Bearer of-a"}, format="json").status_code == 201


def test_delete_forgets_the_secret(tenant_client):
    client = tenant_client("tenant-a")
    client.put(f"{SECRETS}/tok", {"value": "Bearer x-value"}, format="json")
    assert client.delete(f"{SECRETS}/tok").status_code == 204
    assert client.get(f"{SECRETS}/tok").status_code == 404
    assert client.delete(f"{SECRETS}/tok").status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"value": ""},
        {"value": " padded"},
        {"value": "Bearer a\r\nX-Injected: 1"},
        {"value": "caf\u00e9"},
        {"value": "x" * 8193},
        {"value": 123},
        {"value": None},
        {"value": "ok-value", "extra": 1},
        ["value"],
    ],
)
def test_a_bad_value_is_a_400_naming_the_field(tenant_client, body):
    response = tenant_client("tenant-a").put(f"{SECRETS}/tok", body, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert not TenantSecret.objects.exists()


@pytest.mark.parametrize("name", [".hidden", "-dash", "a:b", "a@b", "a+b", "x" * 256, "caf\u00e9"])
def test_a_bad_name_is_a_400_on_name(tenant_client, name):
    response = tenant_client("tenant-a").put(f"{SECRETS}/{name}", {"value": "Bearer v-value"}, format="json")
    assert response.status_code == 400
    assert "name" in response.json()["errors"]


def test_the_api_needs_a_token():
    from rest_framework.test import APIClient

    assert APIClient().get(SECRETS).status_code == 401
    assert APIClient().put(f"{SECRETS}/tok", {"value": "x-value"}, format="json").status_code == 401


def test_a_tenant_holds_a_bounded_number_of_secrets(tenant_client, monkeypatch):
    monkeypatch.setattr(services, "MAX_SECRETS_PER_TENANT", 2)
    client = tenant_client("tenant-a")
    for name in ("one", "two"):
        assert client.put(f"{SECRETS}/{name}", {"value": "Bearer v-value"}, format="json").status_code == 201
    assert client.put(f"{SECRETS}/three", {"value": "Bearer v-value"}, format="json").status_code == 409
    assert client.put(f"{SECRETS}/two", {"value": "Bearer w-value"}, format="json").status_code == 200


def test_a_task_may_name_only_one_of_its_own_tenants_secrets(tenant_client):
    tenant_client("tenant-b").put(f"{SECRETS}/b-token", {"value": "Bearer of-b"}, format="json")
    client = tenant_client("tenant-a")
    foreign = client.post("/v1/tasks", {**TASK, "secret_ref": "b-token"}, format="json")
    missing = client.post("/v1/tasks", {**TASK, "secret_ref": "nothing"}, format="json")
    assert foreign.status_code == missing.status_code == 400
    assert foreign.json()["errors"] == missing.json()["errors"]
    assert "secret_ref" in foreign.json()["errors"]
    client.put(f"{SECRETS}/a-token", {"value": "Bearer of-a"}, format="json")
    assert client.post("/v1/tasks", {**TASK, "secret_ref": "a-token"}, format="json").status_code == 201


def test_a_patch_that_keeps_a_deleted_secrets_name_is_not_refused(tenant_client):
    task = make_task(tenant_id="tenant-a", secret_ref="gone")  # its secret was deleted since
    response = tenant_client("tenant-a").patch(
        f"/v1/tasks/{task.pk}", {"name": "renamed"}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert response.status_code == 200, response.content
    changed = tenant_client("tenant-a").patch(
        f"/v1/tasks/{task.pk}", {"secret_ref": "still-missing"}, format="json", HTTP_IF_MATCH='"2"'
    )
    assert changed.status_code == 400
