"""Use cases on rate limits: set (create or replace) and delete a tenant's limit for an origin."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from domain.ids import new_id
from ratelimits.models import OriginBucket, RateLimit

logger = logging.getLogger(__name__)

MAX_RATE_LIMITS = 100  # per tenant: the claim locks a paced tenant's buckets at once
MIN_PER_SECOND = 0.01
MAX_PER_SECOND = 10000.0
MAX_BURST = 10000


class TooManyRateLimits(Exception):
    """The tenant already has MAX_RATE_LIMITS limits (HTTP 409)."""


class RateLimitNotFound(Exception):
    """No limit with this id for this tenant (another tenant's included)."""


def rate_limit_set(*, tenant_id: str, origin: str, per_second: float, burst: int) -> tuple[RateLimit, bool]:
    """Create or replace the tenant's limit for `origin` (already normalised); (limit, created).

    The bucket row is locked (created) first, then the limit, the order the executors' claim locks
    them in (jobs/sql/pacing.sql): the two never deadlock. A replaced limit keeps its bucket's state:
    what was granted still counts, at the new rate from now on.
    """
    with transaction.atomic():
        OriginBucket.objects.get_or_create(tenant_id=tenant_id, origin=origin, defaults={"id": new_id()})
        bucket = OriginBucket.objects.select_for_update().get(tenant_id=tenant_id, origin=origin)
        limit = RateLimit.objects.select_for_update().filter(tenant_id=tenant_id, origin=origin).first()
        if limit is None:
            # A tenant's first limits have no row to lock: the count is a quota, not a fence.
            if RateLimit.objects.filter(tenant_id=tenant_id).count() >= MAX_RATE_LIMITS:
                raise TooManyRateLimits(tenant_id)
            limit = RateLimit.objects.create(tenant_id=tenant_id, origin=origin, per_second=per_second, burst=burst)
            created = True
        else:
            limit.per_second, limit.burst = per_second, burst
            limit.save(update_fields=["per_second", "burst", "updated_at"])
            created = False
    logger.info(
        "rate limit set",
        extra={
            "event": "rate_limit_set",
            "tenant_id": tenant_id,
            "origin": origin,
            "per_second": per_second,
            "burst": burst,
            "new": created,
            "bucket": str(bucket.id),
        },
    )
    return limit, created


def rate_limit_delete(*, tenant_id: str, limit_id: uuid.UUID) -> None:
    """Stop limiting the origin: from the executors' next claim (its bucket goes with its next use)."""
    deleted, _ = RateLimit.objects.filter(tenant_id=tenant_id, id=limit_id).delete()
    if not deleted:
        raise RateLimitNotFound(str(limit_id))
    logger.info(
        "rate limit deleted", extra={"event": "rate_limit_deleted", "tenant_id": tenant_id, "id": str(limit_id)}
    )
