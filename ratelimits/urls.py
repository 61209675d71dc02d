"""Rate-limit routes (mounted under /v1/)."""

from django.urls import path

from ratelimits import views

urlpatterns = [
    path("rate-limits", views.RateLimitListCreateView.as_view(), name="rate-limits"),
    path("rate-limits/<str:limit_id>", views.RateLimitDetailView.as_view(), name="rate-limit"),
]
