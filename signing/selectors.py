"""Reads of signing secrets: the tenant's list (no values), and the executor's keys for a batch of tenants."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from outbound.signature import key_of
from signing.models import SigningSecret
from signing.sealing import SealUnreadable, unseal

logger = logging.getLogger(__name__)


def _live(now: datetime | Now) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


def live_secrets(*, tenant_id: str, now: datetime) -> QuerySet[SigningSecret]:
    """The tenant's secrets that still sign, newest first."""
    return SigningSecret.objects.filter(_live(now), tenant_id=tenant_id).order_by("-created_at", "-id")


def signing_secret_get(*, tenant_id: str, secret_id: uuid.UUID, now: datetime) -> SigningSecret | None:
    return live_secrets(tenant_id=tenant_id, now=now).filter(id=secret_id).first()


def signing_keys(*, tenant_ids: Iterable[str]) -> dict[str, list[bytes] | None]:
    """Each tenant's live HMAC keys, newest first (one query for the whole batch; the database's clock).

    A tenant with no live secret is absent. A tenant with a live row that does not
    open (the vault's key dropped before `rotate_signing_secret_keys` ran) maps to
    None, logged: its calls must fail and retry, never go out unsigned or signed
    with fewer keys than the tenant's receivers expect.
    """
    tenants = sorted(set(tenant_ids))
    if not tenants:
        return {}
    keys: dict[str, list[bytes] | None] = {}
    rows = (
        SigningSecret.objects.filter(_live(Now()), tenant_id__in=tenants)
        .order_by("tenant_id", "-created_at", "-id")
        .values_list("tenant_id", "id", "ciphertext")
    )
    for tenant_id, secret_id, ciphertext in rows:
        try:
            key = key_of(unseal(ciphertext, tenant_id=tenant_id, secret_id=str(secret_id)))
        except (SealUnreadable, ValueError):
            logger.error(
                "signing secret does not open",
                extra={"event": "signing_secret_unreadable", "tenant_id": tenant_id, "secret_id": str(secret_id)},
            )
            keys[tenant_id] = None
            continue
        held = keys.setdefault(tenant_id, [])
        if held is not None:
            held.append(key)
    return keys
