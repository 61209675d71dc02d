"""Use cases on signing secrets: create (which starts a rotation) and delete."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from domain.ids import new_id
from outbound.signature import new_secret
from signing.models import SigningSecret
from signing.sealing import SealUnreadable, reseal, seal
from signing.selectors import live_secrets

logger = logging.getLogger(__name__)

MAX_LIVE_SECRETS = 2  # the current one and the one being rotated out
DEFAULT_PREVIOUS_EXPIRES_IN = timedelta(hours=24)


class TooManySigningSecrets(Exception):
    """The tenant already has MAX_LIVE_SECRETS live secrets (HTTP 409)."""


class SigningSecretNotFound(Exception):
    """No live secret with this id for this tenant (another tenant's included)."""


def signing_secret_create(
    *, tenant_id: str, previous_expires_in: timedelta = DEFAULT_PREVIOUS_EXPIRES_IN, now: datetime | None = None
) -> tuple[SigningSecret, str]:
    """Create a secret; return (row, the secret itself, which is never readable again).

    The tenant's other live secrets keep signing until `now + previous_expires_in`
    (or their own earlier expiry): both signatures go with every call meanwhile,
    so a receiver can switch to the new secret at its own pace.
    """
    now = now or timezone.now()
    value = new_secret()
    secret_id = new_id()
    with transaction.atomic():
        # Locks the tenant's rows: two concurrent creates count each other (a tenant's first
        # secret has no row to lock, so two first creates may both pass: a quota, not a fence).
        live = list(live_secrets(tenant_id=tenant_id, now=now).select_for_update())
        if len(live) >= MAX_LIVE_SECRETS:
            raise TooManySigningSecrets(tenant_id)
        expires_at = now + previous_expires_in
        SigningSecret.objects.filter(id__in=[s.id for s in live]).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=expires_at)
        ).update(expires_at=expires_at)
        # Rows expired for good are of no use to anyone: dropped here rather than by a sweeper.
        SigningSecret.objects.filter(tenant_id=tenant_id, expires_at__lte=now).delete()
        secret = SigningSecret.objects.create(
            id=secret_id,
            tenant_id=tenant_id,
            ciphertext=seal(tenant_id=tenant_id, secret_id=str(secret_id), value=value),
        )
    logger.info(
        "signing secret created",
        extra={"event": "signing_secret_created", "tenant_id": tenant_id, "secret_id": str(secret_id)},
    )
    return secret, value


def signing_secret_delete(*, tenant_id: str, secret_id: uuid.UUID) -> None:
    """Stop signing with this secret at once."""
    deleted, _ = SigningSecret.objects.filter(tenant_id=tenant_id, id=secret_id).delete()
    if not deleted:
        raise SigningSecretNotFound(str(secret_id))
    logger.info(
        "signing secret deleted",
        extra={"event": "signing_secret_deleted", "tenant_id": tenant_id, "secret_id": str(secret_id)},
    )


def signing_secret_keys_rotate(*, batch_size: int = 500) -> tuple[int, int]:
    """Re-encrypt every signing secret under the first SECRETS_ENCRYPTION_KEYS key; return (rotated, unreadable).

    As vault's `secret_keys_rotate`: by id in batches, each row written only if its ciphertext is
    still the one read.
    """
    rotated = unreadable = 0
    after: uuid.UUID | None = None
    while True:
        query = SigningSecret.objects.order_by("id")
        if after is not None:
            query = query.filter(id__gt=after)
        rows = list(query.values_list("id", "ciphertext")[:batch_size])
        if not rows:
            return rotated, unreadable
        for secret_id, token in rows:
            try:
                fresh = reseal(token)
            except SealUnreadable:
                unreadable += 1
                logger.error(
                    "signing secret does not decrypt",
                    extra={"event": "signing_secret_unreadable", "secret_id": str(secret_id)},
                )
                continue
            rotated += SigningSecret.objects.filter(id=secret_id, ciphertext=token).update(ciphertext=fresh)
        after = rows[-1][0]
