"""A tenant's rate limit for one origin, and the pacing state every executor shares.

`RateLimit` is the tenant's setting (the API's resource). `OriginBucket` is the
state the executors' claims keep under a row lock (jobs.queue.pacing): the
bucket's theoretical arrival time (ratelimits.pacing) and a Retry-After block. A
bucket exists for every origin with a limit (created with it) and, for as long as
the block lasts, for an origin that answered 429 or 503 with Retry-After; a
tenant without bucket rows costs the claim nothing more.
"""

from __future__ import annotations

from django.db import models

from domain.ids import BinaryUUIDField, new_id
from domain.tenants import ExactCharField, TenantIdField
from ratelimits.origins import MAX_ORIGIN_LENGTH


class RateLimit(models.Model):
    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)
    tenant_id = TenantIdField()
    origin = ExactCharField(max_length=MAX_ORIGIN_LENGTH)  # ratelimits.origins.normalise_origin's form
    per_second = models.FloatField()
    burst = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "rate_limits"
        constraints = [models.UniqueConstraint(fields=["tenant_id", "origin"], name="rate_limits_tenant_origin_uniq")]

    def __str__(self) -> str:
        return f"{self.origin}: {self.per_second}/s, burst {self.burst} ({self.tenant_id})"


class OriginBucket(models.Model):
    """Written only by the queue's statements (jobs/sql/pacing.sql) and the limit's create."""

    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)
    tenant_id = TenantIdField()
    origin = ExactCharField(max_length=MAX_ORIGIN_LENGTH)
    tat = models.DateTimeField(null=True, blank=True)  # the theoretical arrival time (ratelimits.pacing)
    blocked_until = models.DateTimeField(null=True, blank=True)  # the origin's Retry-After
    granted = models.BigIntegerField(default=0)
    first_granted_for = models.DateTimeField(null=True, blank=True)
    last_granted_for = models.DateTimeField(null=True, blank=True)
    held_until = models.DateTimeField(null=True, blank=True)  # the latest time a held-back job comes due
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "origin_buckets"
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "origin"], name="origin_buckets_tenant_origin_uniq")
        ]

    def __str__(self) -> str:
        return f"bucket {self.origin} ({self.tenant_id})"
