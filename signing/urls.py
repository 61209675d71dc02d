"""Signing-secret routes (mounted under /v1/)."""

from django.urls import path

from signing import views

urlpatterns = [
    path("signing-secrets", views.SigningSecretListCreateView.as_view(), name="signing-secrets"),
    path("signing-secrets/<str:secret_id>", views.SigningSecretDetailView.as_view(), name="signing-secret"),
]
