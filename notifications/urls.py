"""Notification routes (mounted under /v1/)."""

from django.urls import path

from notifications import views

urlpatterns = [
    path("notifications", views.NotificationView.as_view(), name="notifications"),
    path("notifications/deliveries", views.DeliveryListView.as_view(), name="notification-deliveries"),
]
