"""Liveness, readiness and metrics of the API deployment, answered whatever the Host header.

A kubelet probes `http://<pod IP>:8000/healthz` and Prometheus scrapes the pod by
its IP: neither sends a Host in ALLOWED_HOSTS. ProbeMiddleware, first in the
chain, answers those three paths before anything calls `request.get_host()`;
every other path still goes through ALLOWED_HOSTS, CSRF and the HTTPS redirect.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from api.problems import problem_response
from api.prometheus import exposition
from database.reachability import database_answers


@require_GET
def healthz(request):
    """The process is alive: no dependency is checked, so a DB outage never restarts pods."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request):
    """Ready only when the database answers, so load balancers stop routing otherwise."""
    if database_answers():
        return JsonResponse({"status": "ready", "database": "ok"})
    return problem_response(503, "The database does not answer.", slug="not-ready", database="unreachable")


@require_GET
def metrics(request):
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}


class ProbeMiddleware:
    """Answer the probe paths at once: no host check, no HTTPS redirect, no session, no access line."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
