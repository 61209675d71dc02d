"""POST/GET/DELETE /v1/signing-secrets: shown once, at most two live, rotation expiry, tenants apart."""

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from outbound.signature import key_of
from signing.models import SigningSecret
from signing.selectors import signing_keys

pytestmark = pytest.mark.django_db
URL = "/v1/signing-secrets"


def test_create_shows_the_secret_once_and_reads_never_show_it(tenant_client):
    client = tenant_client("tenant-a")
    created = client.post(URL, {}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["expires_at"] is None
    assert created["Location"] == f"{URL}/{body['id']}"
    listed = client.get(URL).json()["results"]
    assert listed == [{"id": body["id"], "created_at": body["created_at"], "expires_at": None}]
    one = client.get(created["Location"])
    assert one.status_code == 200 and "secret" not in one.json()
    # Sealed at rest: the value is not in the row.
    assert body["secret"] not in SigningSecret.objects.get().ciphertext
    assert signing_keys(tenant_ids=["tenant-a"]) == {"tenant-a": [key_of(body["secret"])]}


def test_the_secret_is_never_logged_nor_in_the_dry_run(tenant_client, caplog, fake_dns):
    from tests.factories import make_task

    client = tenant_client("tenant-a")
    task = make_task()
    with caplog.at_level(logging.DEBUG):
        secret = client.post(URL, {}, format="json").json()["secret"]
        client.get(URL)
        dry_run = client.post(f"/v1/tasks/{task.pk}/dry-run")
        client.post(URL, {"previous_expires_in_seconds": 0}, format="json")  # a rotation
    assert dry_run.json()["signed"] is True
    encoded = secret.removeprefix("whsec_")
    assert encoded not in dry_run.content.decode()  # a signature made with it, never the secret
    logged = "\n".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert "signing secret created" in logged  # the events are logged, without the value
    assert encoded not in logged


def test_a_second_secret_expires_the_first_after_the_window_and_a_third_is_a_409(tenant_client):
    client = tenant_client("tenant-a")
    first = client.post(URL, {}, format="json").json()
    second = client.post(URL, {"previous_expires_in_seconds": 3600}, format="json")
    assert second.status_code == 201
    listed = {row["id"]: row for row in client.get(URL).json()["results"]}
    assert listed[second.json()["id"]]["expires_at"] is None
    expiry = SigningSecret.objects.get(id=first["id"]).expires_at
    assert timedelta(minutes=59) < expiry - timezone.now() <= timedelta(hours=1)
    # Both sign meanwhile, newest first.
    keys = signing_keys(tenant_ids=["tenant-a"])["tenant-a"]
    assert keys == [key_of(second.json()["secret"]), key_of(first["secret"])]
    third = client.post(URL, {}, format="json")
    assert third.status_code == 409
    assert third.json()["type"].endswith("/signing-secrets-limit")


def test_an_expired_secret_no_longer_signs_or_lists_and_frees_its_place(tenant_client):
    client = tenant_client("tenant-a")
    first = client.post(URL, {}, format="json").json()
    client.post(URL, {"previous_expires_in_seconds": 0}, format="json")
    assert [row["id"] for row in client.get(URL).json()["results"]] != [first["id"]]
    assert len(signing_keys(tenant_ids=["tenant-a"])["tenant-a"]) == 1
    assert client.get(f"{URL}/{first['id']}").status_code == 404
    assert client.post(URL, {}, format="json").status_code == 201  # the expired one does not count


def test_delete_stops_signing_at_once_and_a_second_delete_is_a_404(tenant_client):
    client = tenant_client("tenant-a")
    created = client.post(URL, {}, format="json").json()
    assert client.delete(f"{URL}/{created['id']}").status_code == 204
    assert signing_keys(tenant_ids=["tenant-a"]) == {}
    assert client.delete(f"{URL}/{created['id']}").status_code == 404


def test_another_tenants_secret_is_a_404_and_never_listed(tenant_client):
    created = tenant_client("tenant-a").post(URL, {}, format="json").json()
    other = tenant_client("tenant-b")
    assert other.get(URL).json()["results"] == []
    assert other.get(f"{URL}/{created['id']}").status_code == 404
    assert other.delete(f"{URL}/{created['id']}").status_code == 404
    assert other.get(f"{URL}/not-an-id").status_code == 404
    assert signing_keys(tenant_ids=["tenant-b"]) == {}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"previous_expires_in_seconds": -1}, "previous_expires_in_seconds"),
        ({"previous_expires_in_seconds": 7 * 24 * 3600 + 1}, "previous_expires_in_seconds"),
        ({"previous_expires_in_seconds": "soon"}, "previous_expires_in_seconds"),
        ({"previous_expires_in_seconds": "3600"}, "previous_expires_in_seconds"),  # a string, not read as 3600
        ({"previous_expires_in_seconds": False}, "previous_expires_in_seconds"),
        ({"secret": "whsec_mine"}, "secret"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(tenant_client, body, field):
    response = tenant_client("tenant-a").post(URL, body, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert field in response.json()["errors"]
    assert not SigningSecret.objects.exists()


def test_a_sealed_value_copied_onto_another_tenants_row_does_not_open(tenant_client):
    tenant_client("tenant-a").post(URL, {}, format="json")
    row = SigningSecret.objects.get()
    SigningSecret.objects.create(tenant_id="tenant-b", ciphertext=row.ciphertext)
    # Unknown, not "no keys": tenant-b's calls fail and retry rather than going out unsigned.
    assert signing_keys(tenant_ids=["tenant-b"]) == {"tenant-b": None}


def test_no_body_takes_the_defaults_and_a_json_null_is_a_400(tenant_client):
    client = tenant_client("tenant-a")
    assert client.post(URL).status_code == 201
    refused = client.post(URL, "null", content_type="application/json")
    assert refused.status_code == 400
    assert refused["Content-Type"] == "application/problem+json"


def test_rotating_the_encryption_keys_reseals_signing_secrets_and_they_still_sign(tenant_client, settings):
    from cryptography.fernet import Fernet
    from django.core.management import call_command

    created = tenant_client("tenant-a").post(URL, {}, format="json").json()
    before = SigningSecret.objects.get().ciphertext
    settings.SECRETS_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), *settings.SECRETS_ENCRYPTION_KEYS]
    call_command("rotate_signing_secret_keys")
    assert SigningSecret.objects.get().ciphertext != before
    settings.SECRETS_ENCRYPTION_KEYS = settings.SECRETS_ENCRYPTION_KEYS[:1]  # the old key removed
    assert signing_keys(tenant_ids=["tenant-a"]) == {"tenant-a": [key_of(created["secret"])]}
