"""Per-tenant request throttling for the tenant API (settings.TENANT_THROTTLE_RATE)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import SimpleRateThrottle


class TenantRateThrottle(SimpleRateThrottle):
    """Count requests per tenant id; 429 with Retry-After once the rate is spent.

    Keyed by the tenant from the verified token, so one tenant's burst never
    spends another's budget. Counts live in the "throttle" cache (settings.CACHES),
    shared by every process, so the limit is the rate whatever the number of
    workers and pods. Two processes counting at the same instant can both read
    the old history (read-modify-write), so a burst may pass by a request or two.
    """

    scope = "tenant"

    @property  # type: ignore[override]
    def cache(self):  # DRF binds the default cache as a class attribute
        return caches["throttle"]

    def get_rate(self) -> str | None:
        # Read on every request (not once at import) so the setting can be overridden in tests.
        return settings.TENANT_THROTTLE_RATE or None

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        tenant = getattr(request.user, "tenant_id", None)
        if not tenant:
            return None  # unauthenticated requests are refused before they cost anything
        return self.cache_format % {"scope": self.scope, "ident": tenant}
