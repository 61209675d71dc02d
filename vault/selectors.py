"""Reads of tenants' secrets; every one is scoped by tenant id (another tenant's secret is not found)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import reduce
from operator import or_

from django.conf import settings
from django.db.models import Q

from vault.crypto import SecretUnreadable, secret_box
from vault.models import TenantSecret
from vault.mounted import MountedSecretUnreadable, read_mounted

logger = logging.getLogger(__name__)

METADATA_FIELDS = ("tenant_id", "name", "version", "created_at", "updated_at")
_IN_ONE_QUERY = 500  # pairs per SELECT; a claim holds at most --concurrency jobs


def secret_list(*, tenant_id: str) -> list[TenantSecret]:
    """The tenant's secrets by name, without their ciphertext."""
    return list(TenantSecret.objects.filter(tenant_id=tenant_id).only(*METADATA_FIELDS).order_by("name"))


def secret_get(*, tenant_id: str, name: str) -> TenantSecret | None:
    return TenantSecret.objects.filter(tenant_id=tenant_id, name=name).only(*METADATA_FIELDS).first()


def secret_exists(*, tenant_id: str, name: str) -> bool:
    """Whether the tenant has a secret `name`: stored through the API, or mounted in its SECRETS_DIR namespace."""
    if TenantSecret.objects.filter(tenant_id=tenant_id, name=name).exists():
        return True
    if not settings.SECRETS_DIR:
        return False
    try:
        return read_mounted(settings.SECRETS_DIR, tenant_id, name) is not None
    except MountedSecretUnreadable:
        return True  # it is there; the executor reports it unusable (and logs why)


def secret_values(*, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Decrypted values of the (tenant id, name) pairs that exist, in one query per 500 pairs.

    For the executor, once per claimed batch. A pair missing from the result has
    no secret, or one that does not decrypt (logged: that is an operator's key problem).
    """
    wanted = sorted(set(pairs))
    box = secret_box()
    values: dict[tuple[str, str], str] = {}
    for start in range(0, len(wanted), _IN_ONE_QUERY):
        chunk = wanted[start : start + _IN_ONE_QUERY]
        match = reduce(or_, (Q(tenant_id=tenant, name=name) for tenant, name in chunk))
        for tenant, name, token in TenantSecret.objects.filter(match).values_list("tenant_id", "name", "ciphertext"):
            try:
                values[(tenant, name)] = box.open(token, tenant_id=tenant, name=name)
            except SecretUnreadable as exc:
                logger.error(
                    "stored secret does not open",
                    extra={"event": "secret_unreadable", "tenant_id": tenant, "secret": name, "reason": str(exc)},
                )
    return values
