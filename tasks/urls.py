"""Task API routes (mounted under /v1/) and the OpenAPI schema."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from tasks import preview_views, transfer_views, views

urlpatterns = [
    path("tasks", views.TaskListCreateView.as_view(), name="tasks"),
    # Before tasks/<id>: "export" and "import" are no task ids.
    path("tasks/export", transfer_views.TaskExportView.as_view(), name="tasks-export"),
    path("tasks/import", transfer_views.TaskImportView.as_view(), name="tasks-import"),
    path("tasks/<str:task_id>", views.TaskDetailView.as_view(), name="task"),
    path("tasks/<str:task_id>/pause", views.TaskPauseView.as_view(), name="task-pause"),
    path("tasks/<str:task_id>/resume", views.TaskResumeView.as_view(), name="task-resume"),
    path("tasks/<str:task_id>/preview", preview_views.TaskPreviewView.as_view(), name="task-preview"),
    path("schedules/preview", preview_views.SchedulePreviewView.as_view(), name="schedule-preview"),
    # Public: the schema describes the API, it reveals no tenant's data.
    path(
        "schema",
        SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[], throttle_classes=[]),
        name="schema",
    ),
    path(
        "docs",
        SpectacularSwaggerView.as_view(
            url_name="schema", authentication_classes=[], permission_classes=[], throttle_classes=[]
        ),
        name="docs",
    ),
    path(
        "redoc",
        SpectacularRedocView.as_view(
            url_name="schema", authentication_classes=[], permission_classes=[], throttle_classes=[]
        ),
        name="redoc",
    ),
]
