"""Request ids: accept a caller's `X-Request-Id` (if it is sane), else make one; echo it; log it.

The id travels in a context variable, so every log line written while serving
the request carries `request_id` (RequestIdFilter) without passing it around.
A caller's id is kept only when it is 1-128 characters of `A-Z a-z 0-9 - _ . : /
+ =` (a UUID, a W3C trace id, a load balancer's id): anything else could forge
log fields or blow up log lines, so it is replaced.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-Id"
_META_KEY = "HTTP_X_REQUEST_ID"
_VALID = re.compile(r"[A-Za-z0-9\-_.:/+=]{1,128}")

current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)


def accepted_request_id(raw: str | None) -> str:
    """The caller's id when valid, otherwise a fresh one (32 hex digits)."""
    if raw and _VALID.fullmatch(raw):
        return raw
    return uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accepted_request_id(request.META.get(_META_KEY))
        request.request_id = request_id  # type: ignore[attr-defined]  # HttpRequest has no such attribute in the stubs
        token = current_request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response[HEADER] = request_id
        return response


class RequestIdFilter(logging.Filter):
    """Add `request_id` to records written while a request is served."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = current_request_id.get()
        if request_id is not None and not hasattr(record, "request_id"):
            record.request_id = request_id
        return True
