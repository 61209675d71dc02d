"""Calendar API routes (mounted under /v1/)."""

from django.urls import path

from tasks.calendars import views

urlpatterns = [
    path("calendars", views.CalendarListView.as_view(), name="calendars"),
    path("calendars/<str:name>", views.CalendarDetailView.as_view(), name="calendar"),
]
