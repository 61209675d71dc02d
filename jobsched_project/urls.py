"""Top-level routes: probes, the tenant API under /v1/, the admin console, and the edges (`/`, /v1/ misses)."""

from django.contrib import admin
from django.urls import include, path, re_path

from api import edge_views, probes

urlpatterns = [
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("v1/", include("tasks.urls")),
    path("v1/", include("jobs.urls")),
    path("v1/", include("signing.urls")),
    path("v1/", include("ratelimits.urls")),
    path("v1/", include("vault.urls")),
    path("v1/", include("notifications.urls")),
    path("v1/", include("tasks.calendars.urls")),
    path("admin/", admin.site.urls),
    path("", edge_views.home, name="home"),
    # Last: whatever under /v1/ no route above matched (a trailing slash, a typo) answers problem+json.
    re_path(r"^v1(?:/(?P<rest>.*))?$", edge_views.api_fallback),
]

handler400 = "api.problems.bad_request_handler"
handler404 = "api.problems.not_found_handler"
handler500 = "api.problems.server_error_handler"
