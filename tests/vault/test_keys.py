"""Encryption at rest under rotating keys: the first encrypts, all decrypt, a command re-encrypts."""

from __future__ import annotations

import io

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.test import override_settings

from vault.crypto import SecretBox, SecretUnreadable
from vault.models import TenantSecret
from vault.selectors import secret_values
from vault.services import secret_put

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


def test_a_sealed_value_opens_only_for_its_tenant_and_name():
    box = SecretBox([OLD])
    token = box.seal(tenant_id="tenant-a", name="tok", value="Bearer v")
    assert box.open(token, tenant_id="tenant-a", name="tok") == "Bearer v"
    for tenant, name in [("tenant-b", "tok"), ("tenant-a", "other")]:
        with pytest.raises(SecretUnreadable):
            box.open(token, tenant_id=tenant, name=name)


def test_the_first_key_encrypts_and_every_key_decrypts():
    old_token = SecretBox([OLD]).seal(tenant_id="t", name="n", value="v")
    both = SecretBox([NEW, OLD])
    assert both.open(old_token, tenant_id="t", name="n") == "v"
    new_token = both.seal(tenant_id="t", name="n", value="v")
    assert SecretBox([NEW]).open(new_token, tenant_id="t", name="n") == "v"
    with pytest.raises(SecretUnreadable):
        SecretBox([OLD]).open(new_token, tenant_id="t", name="n")


@pytest.mark.django_db
def test_rotate_secret_keys_re_encrypts_every_row_under_the_first_key():
    with override_settings(SECRETS_ENCRYPTION_KEYS=[OLD]):
        for n in range(5):
            secret_put(tenant_id="tenant-a", name=f"tok-{n}", value=f"Bearer v{n}")
    before = dict(TenantSecret.objects.values_list("name", "ciphertext"))
    with override_settings(SECRETS_ENCRYPTION_KEYS=[NEW, OLD]):
        out = io.StringIO()
        call_command("rotate_secret_keys", batch_size=2, stdout=out)
        assert out.getvalue().strip() == "rotated=5 unreadable=0"
    after = dict(TenantSecret.objects.values_list("name", "ciphertext"))
    assert all(after[name] != before[name] for name in before)
    with override_settings(SECRETS_ENCRYPTION_KEYS=[NEW]):  # the old key can go now
        pairs = [("tenant-a", f"tok-{n}") for n in range(5)]
        assert secret_values(pairs=pairs) == {pair: f"Bearer v{n}" for n, pair in enumerate(pairs)}


@pytest.mark.django_db
def test_a_row_no_key_opens_is_reported_and_the_command_fails():
    with override_settings(SECRETS_ENCRYPTION_KEYS=[OLD]):
        secret_put(tenant_id="tenant-a", name="lost", value="Bearer v")
    with override_settings(SECRETS_ENCRYPTION_KEYS=[NEW]), pytest.raises(CommandError, match="1 secrets"):
        call_command("rotate_secret_keys", stdout=io.StringIO())
    with override_settings(SECRETS_ENCRYPTION_KEYS=[NEW]):
        assert secret_values(pairs=[("tenant-a", "lost")]) == {}
