"""Top-level routes: probes, the tenant API under /v1/, and the admin console."""

from django.contrib import admin
from django.urls import include, path

from api import probes

urlpatterns = [
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("v1/", include("tasks.urls")),
    path("v1/", include("jobs.urls")),
    path("v1/", include("signing.urls")),
    path("v1/", include("vault.urls")),
    path("admin/", admin.site.urls),
]

handler400 = "api.problems.bad_request_handler"
handler404 = "api.problems.not_found_handler"
handler500 = "api.problems.server_error_handler"
