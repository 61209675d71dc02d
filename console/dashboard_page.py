"""The queue dashboard page in the admin: the figures of `jobs.dashboard`, charted, refreshing itself.

The page polls its own URL every few seconds with htmx (vendored, served as a
static file) and swaps in the panels fragment only; viewing needs jobs.view_job.
"""

from __future__ import annotations

from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from console import charts
from jobs.queue import dashboard

REFRESH_SECONDS = 5
_STATUS_COLOURS = {
    "pending": charts.NEUTRAL,
    "running": charts.LATE,
    "succeeded": charts.SUCCEEDED,
    "dead": charts.DEAD,
    "cancelled": charts.CANCELLED,
    "skipped": charts.CANCELLED,  # grey too: never called (the task's overlap policy or calendars)
}


def _panels_context(figures: dashboard.Dashboard) -> dict:
    minutes = figures.minutes
    captions = [f"-{m.minutes_ago}" if m.minutes_ago else "now" for m in minutes]
    return {
        "figures": figures,
        "status_chart": charts.horizontal_bars(
            [(status, figures.counts[status], _STATUS_COLOURS[status]) for status in dashboard.STATUSES],
            label="jobs by status",
        ),
        "throughput_chart": charts.stacked_columns(
            [
                (caption, [(m.succeeded, charts.SUCCEEDED, "succeeded"), (m.dead, charts.DEAD, "dead")])
                for caption, m in zip(captions, minutes, strict=True)
            ],
            label="finished jobs per minute",
        ),
        "lateness_chart": charts.stacked_columns(
            [
                (caption, [(m.late_p95_ms or 0, charts.LATE, "ms late (p95)")])
                for caption, m in zip(captions, minutes, strict=True)
            ],
            label="claim lateness per minute, p95 in ms",
            unit="ms",  # late_p95_ms: jobs.queue.dashboard measures it in milliseconds
        ),
        "dead_series": [
            (series, charts.sparkline(series.per_hour, label=f"dead jobs of {series.tenant_id} per hour"))
            for series in figures.dead_tenants
        ],
        "lateness_sample": dashboard.LATENESS_SAMPLE,
        "finished_cap": dashboard.FINISHED_CAP,
        "job_changelist": reverse("admin:jobs_job_changelist"),
        "dead_changelist": reverse("admin:jobs_deadjob_changelist"),
        "tenant_limits_changelist": reverse("admin:tasks_tenantlimits_changelist"),
    }


def dashboard_view(request: HttpRequest, *, site: AdminSite) -> HttpResponse:
    if not request.user.has_perm("jobs.view_job"):
        raise PermissionDenied
    context = _panels_context(dashboard.read_dashboard())
    if request.headers.get("HX-Request") == "true":
        return TemplateResponse(request, "admin/jobs/dashboard_panels.html", context)
    return TemplateResponse(
        request,
        "admin/jobs/dashboard.html",
        {
            **site.each_context(request),
            **context,
            "title": "Queue dashboard",
            "refresh_seconds": REFRESH_SECONDS,
        },
    )
