"""Requests without a valid token, counted per client address (settings.ANONYMOUS_THROTTLE_RATE).

DRF's throttles run after authentication and permissions, so a request refused
there (no token, a forged or expired one) is never counted: an unauthenticated
flood costs a verification, a log line and a metric each, unbounded. The
tenant authentication calls `spend` on each such request instead, before it
answers 401; past the budget the answer is a 429 with Retry-After. A valid
token never spends or meets this budget.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import caches
from rest_framework import exceptions
from rest_framework.throttling import SimpleRateThrottle


def client_address(request: Any) -> str:
    """The peer's address, or the one a trusted proxy (FORWARDED_ALLOW_IPS) saw: X-Forwarded-For's last entry.

    The last entry is the one the proxy itself appended; earlier ones are the client's to forge.
    """
    peer = request.META.get("REMOTE_ADDR", "")
    trusted = settings.FORWARDED_ALLOW_IPS
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if forwarded and ("*" in trusted or peer in trusted):
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return peer


class AnonymousRateThrottle(SimpleRateThrottle):
    scope = "anonymous"

    @property  # type: ignore[override]  # DRF declares `cache` a class attribute; the shared store is chosen at call time
    def cache(self):
        return caches["throttle"]  # shared by every process, as the tenant throttle's

    def get_rate(self) -> str | None:
        return settings.ANONYMOUS_THROTTLE_RATE or None

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


def spend(request: Any) -> None:
    """Count one request without a valid token; Throttled (429) once the address spent its budget."""
    throttle = AnonymousRateThrottle()
    if throttle.rate is None:
        return
    if not throttle.allow_request(request, None):  # type: ignore[arg-type]  # the view is unused by this throttle
        raise exceptions.Throttled(throttle.wait())
