"""Secrets API routes (mounted under /v1/)."""

from django.urls import path

from vault import views

urlpatterns = [
    path("secrets", views.SecretListView.as_view(), name="secrets"),
    path("secrets/<str:name>", views.SecretDetailView.as_view(), name="secret"),
]
