"""Which peers may speak for the client: the proxies in FORWARDED_ALLOW_IPS, and no one else.

Django reads SECURE_PROXY_SSL_HEADER from any request, and X-Forwarded-For is
the client's to write: a caller that reaches the API directly could claim https
or another address. The middleware drops those headers from every other peer,
so the rest of the code (the https check, the anonymous throttle) can read them.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def is_trusted_proxy(peer: str) -> bool:
    trusted = settings.FORWARDED_ALLOW_IPS
    return "*" in trusted or peer in trusted


def client_address(request: HttpRequest) -> str:
    """The peer's address, or, from a trusted proxy, the last X-Forwarded-For entry (the one the proxy appended)."""
    peer = request.META.get("REMOTE_ADDR", "")
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if forwarded and is_trusted_proxy(peer):
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return peer


class UntrustedProxyHeadersMiddleware:
    """Drop X-Forwarded-* and the SECURE_PROXY_SSL_HEADER from peers that are not a configured proxy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_trusted_proxy(request.META.get("REMOTE_ADDR", "")):
            ssl_header = settings.SECURE_PROXY_SSL_HEADER[0] if settings.SECURE_PROXY_SSL_HEADER else None
            for key in [k for k in request.META if k.startswith("HTTP_X_FORWARDED_") or k == ssl_header]:
                del request.META[key]
        return self.get_response(request)
