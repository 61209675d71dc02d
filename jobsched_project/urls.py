"""Top-level routes: probes, the tenant API under /v1/, and the admin console."""

from django.contrib import admin
from django.urls import include, path

from jobsched_project import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("v1/", include("tasks.urls")),
    path("v1/", include("jobs.urls")),
    path("v1/", include("signing.urls")),
    path("v1/", include("vault.urls")),
    path("admin/", admin.site.urls),
]

handler400 = "jobsched_project.problems.bad_request_handler"
handler404 = "jobsched_project.problems.not_found_handler"
handler500 = "jobsched_project.problems.server_error_handler"
