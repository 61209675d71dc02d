"""One access line and the request metrics per API request.

The line names the tenant (from the verified token; none for anonymous or admin
requests), the route pattern, the status and the milliseconds; the request id
is added by the log filter. Probes never get here (health.ProbeMiddleware answers
them first), so a kubelet polling every few seconds does not flood the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject, empty

from api.prometheus import API_LATENCY, API_REQUESTS

logger = logging.getLogger("jobsched.access")

UNMATCHED_ROUTE = "<unmatched>"
_MAX_PATH = 200
# Metric labels come from fixed sets: a raw method from an unauthenticated caller would make
# one series per distinct string (a flood of random methods grew /metrics without bound).
KNOWN_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
OTHER = "other"


def method_label(method: str | None) -> str:
    """The request's method if it is one the API knows, else `other`."""
    return method if method in KNOWN_METHODS else OTHER


def route_of(request: HttpRequest) -> str:
    """The URL pattern, so ids never become label values; static files (WhiteNoise) are one route."""
    match = getattr(request, "resolver_match", None)
    if match is not None and match.route:
        return f"/{match.route}"
    if settings.STATIC_URL and request.path.startswith(settings.STATIC_URL):
        return settings.STATIC_URL
    return UNMATCHED_ROUTE


def tenant_of(request: HttpRequest) -> str | None:
    user = request.__dict__.get("user")
    if isinstance(user, SimpleLazyObject) and user._wrapped is empty:
        return None  # never evaluated: no session or token was looked at, so there is no tenant
    return getattr(user, "tenant_id", None)


class AccessLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        route = route_of(request)
        method = method_label(request.method)
        API_REQUESTS.labels(route, method, str(response.status_code)).inc()
        API_LATENCY.labels(route, method).observe(seconds)
        logger.info(
            "request",
            extra={
                "event": "access",
                "method": method,
                "route": route,
                "path": request.path[:_MAX_PATH],
                "status": response.status_code,
                "ms": round(seconds * 1000, 1),
                "tenant": tenant_of(request),
            },
        )
        return response
