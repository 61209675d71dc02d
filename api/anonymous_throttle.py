"""Requests without a valid token, counted per client address (settings.ANONYMOUS_THROTTLE_RATE).

The counts live in their own cache (ANONYMOUS_THROTTLE_CACHE_URL), per process by
default: an unauthenticated flood must not become writes on the queue's MySQL.

DRF's throttles run after authentication and permissions, so a request refused
there (no token, a forged or expired one) is never counted: an unauthenticated
flood costs a verification, a log line and a metric each, unbounded. The
tenant authentication calls `spend` on each such request instead, before it
answers 401; past the budget the answer is a 429 with Retry-After. A valid
token never spends or meets this budget.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from rest_framework import exceptions
from rest_framework.throttling import SimpleRateThrottle

from api.proxies import client_address


class AnonymousRateThrottle(SimpleRateThrottle):
    scope = "anonymous"

    @property  # type: ignore[override]  # DRF declares `cache` a class attribute; the store is chosen at call time
    def cache(self):
        return caches["anonymous_throttle"]  # ANONYMOUS_THROTTLE_CACHE_URL: per process unless shared

    def get_rate(self) -> str | None:
        return settings.ANONYMOUS_THROTTLE_RATE or None

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": budget_key(client_address(request))}


def budget_key(address: str) -> str:
    """An IPv6 address counts by its /64 (one subscriber's block), or it could pick a fresh budget per request."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def spend(request: Any) -> None:
    """Count one request without a valid token; Throttled (429) once the address spent its budget."""
    throttle = AnonymousRateThrottle()
    if throttle.rate is None:
        return
    if not throttle.allow_request(request, None):  # type: ignore[arg-type]  # the view is unused by this throttle
        raise exceptions.Throttled(throttle.wait())


class AdminLoginThrottleMiddleware:
    """The support console's login POSTs spend the same per-address budget: each costs a password hash.

    Django's login hashes the password (PBKDF2, about a million rounds) even for an unknown
    user, so an unthrottled form is the cheapest way to load an API pod.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The admin's login path ends so (its urls are "login/" under the site's prefix): the suffix
        # spares every other POST the reverse(), which took about a twentieth of a task create's CPU.
        if request.method == "POST" and request.path.endswith("/login/") and request.path == reverse("admin:login"):
            throttle = AnonymousRateThrottle()
            if throttle.rate is not None and not throttle.allow_request(request, None):  # type: ignore[arg-type]  # no view
                wait = throttle.wait()
                response = HttpResponse("Too many sign-in attempts; try again later.", status=429)
                response["Retry-After"] = str(max(1, int(wait or 1)))
                return response
        return self.get_response(request)
