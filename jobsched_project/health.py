"""Liveness and readiness probes for the API deployment."""

from django.http import JsonResponse
from django.views.decorators.http import require_GET

from jobsched_project.database import database_answers
from jobsched_project.problems import problem_response


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
