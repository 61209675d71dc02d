"""Top-level routes: probes, the tenant API under /v1/, the admin console, and the edges (`/`, /v1/ misses)."""

from django.contrib import admin
from django.urls import include, path, re_path

from jobsched_project import edge_views, health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("v1/", include("tasks.urls")),
    path("v1/", include("jobs.urls")),
    path("v1/", include("signing.urls")),
    path("v1/", include("vault.urls")),
    path("admin/", admin.site.urls),
    path("", edge_views.home, name="home"),
    # Last: whatever under /v1/ no route above matched (a trailing slash, a typo) answers problem+json.
    re_path(r"^v1(?:/(?P<rest>.*))?$", edge_views.api_fallback),
]

handler400 = "jobsched_project.problems.bad_request_handler"
handler404 = "jobsched_project.problems.not_found_handler"
handler500 = "jobsched_project.problems.server_error_handler"
