"""Job API routes (mounted under /v1/)."""

from django.urls import path

from jobs import backfill_views, views

urlpatterns = [
    path("jobs/<str:job_id>", views.JobDetailView.as_view(), name="job"),
    path("jobs/<str:job_id>/retry", views.JobRetryView.as_view(), name="job-retry"),
    path("jobs/<str:job_id>/cancel", views.JobCancelView.as_view(), name="job-cancel"),
    path("tasks/<str:task_id>/history", views.TaskHistoryView.as_view(), name="task-history"),
    path("tasks/<str:task_id>/run", views.TaskRunView.as_view(), name="task-run"),
    path("tasks/<str:task_id>/dry-run", views.TaskDryRunView.as_view(), name="task-dry-run"),
    path("tasks/<str:task_id>/backfill", backfill_views.TaskBackfillView.as_view(), name="task-backfill"),
    path("dlq", views.DeadLetterQueueView.as_view(), name="dlq"),
]
