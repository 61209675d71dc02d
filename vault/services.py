"""Use cases on tenants' secrets: put (create or replace), delete, re-encrypt under the newest key."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from vault.crypto import SecretUnreadable, secret_box
from vault.models import TenantSecret

logger = logging.getLogger(__name__)

MAX_SECRETS_PER_TENANT = 500


class SecretNotFound(Exception):
    """The tenant has no secret of that name (another tenant's included)."""


class TooManySecrets(Exception):
    """The tenant already holds MAX_SECRETS_PER_TENANT secrets."""


def secret_put(*, tenant_id: str, name: str, value: str) -> tuple[TenantSecret, bool]:
    """Store `value` as the tenant's secret `name`; return (secret, created). `value` is validated (vault.rules)."""
    ciphertext = secret_box().seal(tenant_id=tenant_id, name=name, value=value)
    mine = TenantSecret.objects.filter(tenant_id=tenant_id, name=name)
    for _ in range(2):
        if mine.update(ciphertext=ciphertext, version=F("version") + 1, updated_at=timezone.now()):
            return mine.get(), False
        # Counted before the insert, so two racing creates may pass the cap by one: a quota, not a fence.
        if TenantSecret.objects.filter(tenant_id=tenant_id).count() >= MAX_SECRETS_PER_TENANT:
            raise TooManySecrets(tenant_id)
        try:
            with transaction.atomic():
                secret = TenantSecret.objects.create(tenant_id=tenant_id, name=name, ciphertext=ciphertext)
        except IntegrityError:
            continue  # a concurrent PUT of the same name inserted first (UNIQUE): replace its value
        logger.info("secret created", extra={"event": "secret_created", "tenant_id": tenant_id, "secret": name})
        return secret, True
    return mine.get(), False


def secret_delete(*, tenant_id: str, name: str) -> None:
    """Forget the secret; tasks naming it then fail their attempts with "secret unavailable"."""
    deleted, _ = TenantSecret.objects.filter(tenant_id=tenant_id, name=name).delete()
    if not deleted:
        raise SecretNotFound(name)
    logger.info("secret deleted", extra={"event": "secret_deleted", "tenant_id": tenant_id, "secret": name})


def secret_keys_rotate(*, batch_size: int = 500) -> tuple[int, int]:
    """Re-encrypt every stored secret under the first key of SECRETS_ENCRYPTION_KEYS; return (rotated, unreadable).

    Walks the table by id in batches. Each row is written only if its
    ciphertext is still the one read: a PUT in between already wrote it under
    the first key and must not be overwritten with the older value.
    """
    box = secret_box()
    rotated = unreadable = 0
    last_id = 0
    while True:
        rows = list(
            TenantSecret.objects.filter(id__gt=last_id).order_by("id").values_list("id", "ciphertext")[:batch_size]
        )
        if not rows:
            return rotated, unreadable
        for secret_id, token in rows:
            try:
                fresh = box.rotate(token)
            except SecretUnreadable:
                unreadable += 1
                logger.error("secret does not decrypt", extra={"event": "secret_unreadable", "secret_id": secret_id})
                continue
            rotated += TenantSecret.objects.filter(id=secret_id, ciphertext=token).update(ciphertext=fresh)
        last_id = rows[-1][0]
