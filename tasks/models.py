"""A task: an HTTP call and when to make it (a cron in a zone, or one `run_at`)."""

from __future__ import annotations

from django.db import models

from jobsched_project.ids import BinaryUUIDField, new_id
from jobsched_project.tenants import TenantIdField
from tasks.priority import DEFAULT_PRIORITY


class TaskStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"
    DELETED = "deleted"


class HttpMethod(models.TextChoices):
    GET = "GET"
    POST = "POST"
    PUT = "PUT"
    PATCH = "PATCH"
    DELETE = "DELETE"
    HEAD = "HEAD"
    OPTIONS = "OPTIONS"


class Task(models.Model):
    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)
    tenant_id = TenantIdField()
    name = models.CharField(max_length=200)

    http_url = models.CharField(max_length=2048)
    http_method = models.CharField(max_length=7, choices=HttpMethod.choices, default=HttpMethod.POST)
    http_headers = models.JSONField(default=dict, blank=True)
    http_body = models.TextField(blank=True, default="")

    # Exactly one of (cron_expression + timezone) and run_at is set.
    cron_expression = models.CharField(max_length=120, null=True, blank=True)
    timezone = models.CharField(max_length=64, null=True, blank=True)
    run_at = models.DateTimeField(null=True, blank=True)

    timeout_seconds = models.PositiveIntegerField(default=30)
    max_attempts = models.PositiveIntegerField(default=5)
    backoff_base_seconds = models.PositiveIntegerField(default=10)
    priority = models.PositiveSmallIntegerField(default=DEFAULT_PRIORITY)  # tasks.priority.PRIORITIES

    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.ACTIVE)
    # Owned by the scheduler; tenant edits never write it except to recompute a changed schedule.
    next_run_at = models.DateTimeField(null=True, blank=True)
    # Bumped by every tenant edit and never by the scheduler: it is the ETag.
    version = models.PositiveIntegerField(default=1)

    # Binary collation: keys differing only in case are different keys (trailing
    # spaces still compare equal under PAD SPACE, so the API refuses them).
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, db_collation="utf8mb4_bin")
    request_sha256 = models.CharField(max_length=64, null=True, blank=True)
    secret_ref = models.CharField(max_length=255, null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "tasks"
        indexes = [
            models.Index(fields=["status", "next_run_at"], name="tasks_due_idx"),
            models.Index(fields=["tenant_id", "id"], name="tasks_tenant_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "idempotency_key"], name="tasks_tenant_idem_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def is_one_shot(self) -> bool:
        return self.run_at is not None
