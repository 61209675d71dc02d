"""The API's edges: `/`, a trailing slash, and paths under /v1/ that name nothing.

Django answers an unknown path with its HTML debug page in DEBUG (and handler404 only with
DEBUG off), so /v1/... gets its own catch-all: always problem+json, pointing at the schema.
A trailing slash on a real route is a 308 to the route without it: one URL per resource,
and 308 keeps the method and the body (RFC 9110 section 15.4.9), so a POST stays a POST.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt

from api.problems import problem_response

API_PREFIX = "/v1/"


class _PermanentRedirectKeepingMethod(HttpResponsePermanentRedirect):
    status_code = 308


def _route_without_slash(path: str) -> str | None:
    """`path` without its trailing slash, if that names a real route (not this catch-all)."""
    if not path.endswith("/") or path == API_PREFIX:
        return None
    stripped = path.rstrip("/")
    try:
        match = resolve(stripped)
    except Resolver404:
        return None
    return None if match.func is api_fallback else stripped


@csrf_exempt  # any method may land here; none changes anything
def api_fallback(request: HttpRequest, rest: str = "") -> HttpResponse:
    target = _route_without_slash(request.path)
    if target is not None:
        query = request.META.get("QUERY_STRING", "")
        return _PermanentRedirectKeepingMethod(f"{target}?{query}" if query else target)
    return problem_response(
        404,
        f"No such resource: {request.path}. The API's routes are listed in its schema, /v1/schema "
        "(as pages: /v1/docs, /v1/redoc).",
    )


def home(request: HttpRequest) -> HttpResponse:
    """A small page for whoever opens the server's address in a browser."""
    return render(request, "home.html")
