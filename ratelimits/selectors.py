"""Reads of rate limits: the tenant's page, one limit."""

from __future__ import annotations

import uuid

from ratelimits.models import RateLimit


def rate_limit_page(
    *, tenant_id: str, before: uuid.UUID | None, limit: int
) -> tuple[list[RateLimit], uuid.UUID | None]:
    """Up to `limit` limits newest first (UUIDv7 ids grow with time), and the next cursor (keyset on id)."""
    query = RateLimit.objects.filter(tenant_id=tenant_id)
    if before is not None:
        query = query.filter(pk__lt=before)
    rows = list(query.order_by("-pk")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].pk
    return rows, None


def rate_limit_get(*, tenant_id: str, limit_id: uuid.UUID) -> RateLimit | None:
    return RateLimit.objects.filter(tenant_id=tenant_id, id=limit_id).first()
