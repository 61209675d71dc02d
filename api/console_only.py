"""The support console's middleware (sessions, Django's users, messages), skipped by the tenant API.

The tenant API under /v1/ authenticates every request by its bearer token and keeps nothing
between requests: none of its views reads a session, a Django user or a message. For its
requests these three did nothing but build their lazy objects (docs/benchmarks/issue33-create-repeats.md).
Each class here is Django's, run as before for every other path (the console under /admin/, the
home page), and named in MIDDLEWARE where Django's was, so the admin's checks still find them.
Django's CSRF middleware stays as it is for every path: `check --deploy` looks for it by name,
and for the API's views, all exempt, it reads no more than the request's cookies.

What a /v1/ answer no longer does: delete a malformed console session cookie the request
carried (Django's sessions answer such a request with an expired `sessionid` and `Vary: Cookie`).
"""

from __future__ import annotations

from collections.abc import Awaitable

from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

from api.edge_views import API_PREFIX

_API_ROOT = API_PREFIX.rstrip("/")


def is_api_request(request: HttpRequest) -> bool:
    """Whether `request` is for the tenant API (its path under /v1/, or /v1 itself)."""
    path = request.path_info
    return path.startswith(API_PREFIX) or path == _API_ROOT


class _ConsoleOnly(MiddlewareMixin):
    """Pass a request for the tenant API straight on; run Django's middleware for any other."""

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if is_api_request(request):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(_ConsoleOnly, DjangoSessionMiddleware):
    """Django's sessions, for the console."""


class AuthenticationMiddleware(_ConsoleOnly, DjangoAuthenticationMiddleware):
    """Django's `request.user`, for the console (the API's user is its token's, set by DRF)."""


class MessageMiddleware(_ConsoleOnly, DjangoMessageMiddleware):
    """Django's messages, for the console."""
