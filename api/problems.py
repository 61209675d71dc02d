"""RFC 9457 problem details for every error the API returns.

DRF's own errors (400, 401, 403, 404, 405, 415, 429) go through
`problem_exception_handler`; views raise `Problem` for the rest (409, 412, 422,
428, 503). Validation errors list the offending fields under `errors`.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://jobsched.dev/problems/"


class Problem(exceptions.APIException):
    """An API error with an explicit status, slug and detail."""

    def __init__(
        self, status_code: int, slug: str, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
    ):
        super().__init__(detail=detail)
        self.status_code = status_code
        self.slug = slug
        self.extra = extra
        self.headers = headers or {}


def not_found(thing: str) -> Problem:
    """The one 404 body per kind of resource: missing, another tenant's or a malformed id alike."""
    return Problem(404, "not-found", f"No such {thing}.")


def problem_body(status_code: int, detail: str, *, slug: str | None = None, **extra: Any) -> dict[str, Any]:
    title = HTTPStatus(status_code).phrase
    slug = slug or title.lower().replace(" ", "-").replace("'", "")
    return {"type": PROBLEM_TYPE_BASE + slug, "title": title, "status": status_code, "detail": detail, **extra}


def problem_response(status_code: int, detail: str, *, slug: str | None = None, **extra: Any) -> JsonResponse:
    """A plain Django response, for views outside DRF (health, 404/500 handlers)."""
    return JsonResponse(
        problem_body(status_code, detail, slug=slug, **extra), status=status_code, content_type=PROBLEM_CONTENT_TYPE
    )


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Turn DRF's nested error dict into {"http.url": ["..."], ...}."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            out.update(flatten_errors(value, name))
        return out
    if isinstance(detail, list) and detail and all(isinstance(d, (str, exceptions.ErrorDetail)) for d in detail):
        return {prefix or "body": [str(d) for d in detail]}
    if isinstance(detail, list):
        out = {}
        for index, value in enumerate(detail):
            out.update(flatten_errors(value, f"{prefix}[{index}]" if prefix else f"[{index}]"))
        return out
    return {prefix or "body": [str(detail)]}


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, RequestDataTooBig):
        # Django raises this while DRF reads the body; unhandled it would be an HTML 400.
        exc = Problem(413, "content-too-large", "The request body is too large.")
    response = exception_handler(exc, context)
    if response is None:
        return None  # a real bug: let Django's 500 handler answer
    if isinstance(exc, Problem):
        body = problem_body(exc.status_code, str(exc.detail), slug=exc.slug, **exc.extra)
        for name, value in exc.headers.items():
            response[name] = value
    elif isinstance(exc, exceptions.ValidationError):
        fields = flatten_errors(exc.detail)
        detail = "; ".join(f"{name}: {msgs[0]}" for name, msgs in fields.items())
        body = problem_body(
            status.HTTP_400_BAD_REQUEST, detail or "invalid request", slug="validation-error", errors=fields
        )
    else:
        detail = str(exc.detail) if isinstance(exc, exceptions.APIException) else str(exc)
        body = problem_body(response.status_code, detail)
    response.data = body
    response.content_type = PROBLEM_CONTENT_TYPE
    return response


def bad_request_handler(request, exception=None) -> JsonResponse:
    return problem_response(400, "The request could not be read.")


def not_found_handler(request, exception=None) -> JsonResponse:
    return problem_response(404, "No such resource.")


def server_error_handler(request) -> JsonResponse:
    return problem_response(500, "Internal error; it has been logged.")
