"""A task: an HTTP call and when to make it (a cron in a zone, or one `run_at`)."""

from __future__ import annotations

from typing import Any

from django.core.validators import MinValueValidator
from django.db import models

from domain.ids import BinaryUUIDField, new_id
from domain.tenants import TenantIdField
from tasks.priority import DEFAULT_PRIORITY
from tasks.schedule import missed, overlap


class TaskStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"
    DELETED = "deleted"
    # Past its ends_at or max_runs (tasks.schedule.bounds): no next run; set by the scheduler's tick.
    COMPLETED = "completed"


class MissedRuns(models.TextChoices):
    """What the scheduler does with runs it reaches late (after an outage): tasks/schedule/missed.py."""

    ALL = missed.ALL  # replay every missed run, oldest first (at most SCHEDULER_MISSED_RUNS_MAX of them)
    LATEST = missed.LATEST  # only the most recent missed run
    SKIP = missed.SKIP  # none: continue at the next run in the future


class Overlap(models.TextChoices):
    """What a new run does while the task's previous runs are unfinished (tasks/schedule/overlap.py)."""

    ALLOW = overlap.ALLOW  # created as always (runs may overlap)
    SKIP = overlap.SKIP  # skipped while a previous run is pending (waiting or retrying) or running
    BUFFER_ONE = overlap.BUFFER_ONE  # skipped while a previous run is already waiting (pending)
    REPLACE = overlap.REPLACE  # created; waiting or retrying previous runs are cancelled


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

    # Exactly one of cron_expression (+ timezone), every_seconds (+ anchor) and run_at is set.
    cron_expression = models.CharField(max_length=120, null=True, blank=True)
    timezone = models.CharField(max_length=64, null=True, blank=True)
    run_at = models.DateTimeField(null=True, blank=True)
    every_seconds = models.PositiveIntegerField(null=True, blank=True)  # tasks.schedule.every
    anchor = models.DateTimeField(null=True, blank=True)  # every's runs are anchor + k * every
    # The run is called up to this many seconds after its nominal time (tasks.schedule.window).
    window_seconds = models.PositiveIntegerField(default=0, db_default=0)
    starts_at = models.DateTimeField(null=True, blank=True)  # no run before
    ends_at = models.DateTimeField(null=True, blank=True)  # no run after; then the task is completed
    max_runs = models.PositiveIntegerField(null=True, blank=True)  # then the task is completed
    # Runs scheduled while the task has ends_at or max_runs (skipped ones included): written only by
    # the tick's limited advance (jobs/sql/scheduler.sql), reset when an edit gives a task limits.
    runs_scheduled = models.PositiveIntegerField(default=0, db_default=0)
    delete_after_completion = models.BooleanField(default=False, db_default=False)
    # db_default too: the queue's and the benches' raw INSERTs name only the columns they set.
    overlap = models.CharField(max_length=10, choices=Overlap.choices, default=Overlap.ALLOW, db_default=Overlap.ALLOW)

    timeout_seconds = models.PositiveIntegerField(default=30)
    max_attempts = models.PositiveIntegerField(default=5)
    backoff_base_seconds = models.PositiveIntegerField(default=10)
    priority = models.PositiveSmallIntegerField(default=DEFAULT_PRIORITY)  # tasks.priority.PRIORITIES

    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.ACTIVE)
    # db_default too: the queue's and the benches' raw INSERTs name only the columns they set.
    paused_reason = models.CharField(max_length=255, blank=True, default="", db_default="")  # why, while paused
    missed_runs = models.CharField(
        max_length=8, choices=MissedRuns.choices, default=MissedRuns.ALL, db_default=MissedRuns.ALL
    )
    # Pause after this many dead jobs in a row; NULL: the AUTO_PAUSE_AFTER_DEAD_JOBS setting, 0: never.
    auto_pause_after = models.PositiveIntegerField(null=True, blank=True)

    # How the task is doing, written by the executor's result batches (never by tenant edits).
    consecutive_failures = models.PositiveIntegerField(
        default=0, db_default=0
    )  # dead jobs in a row; a success resets it
    last_run_job_id = BinaryUUIDField(null=True, blank=True)
    last_run_scheduled_at = models.DateTimeField(null=True, blank=True)
    last_run_status = models.CharField(max_length=16, null=True, blank=True)  # tasks.run_health.LAST_RUN_STATUSES
    last_run_http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    # Owned by the scheduler; tenant edits never write it except to recompute a changed schedule.
    next_run_at = models.DateTimeField(null=True, blank=True)
    # Bumped by every tenant edit and never by the scheduler: it is the ETag.
    version = models.PositiveIntegerField(default=1)

    # Binary collation: keys differing only in case are different keys (trailing
    # spaces still compare equal under PAD SPACE, so the API refuses them).
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, db_collation="utf8mb4_bin")
    request_sha256 = models.CharField(max_length=64, null=True, blank=True)
    secret_ref = models.CharField(max_length=255, null=True, blank=True)
    # The tenant's labels (tasks.labels); mirrored row by row in task_labels for the filtered list.
    # db_default: the scheduler's and the benches' raw INSERTs name only the columns they set.
    labels = models.JSONField(default=dict, blank=True, db_default=models.Value("{}"))
    # schedule.exclude_calendars (tasks.calendars), mirrored in task_calendars; NULL, not [], when there are
    # none: the scheduler's insert tests IS NULL and only looks calendars up for the other rows.
    exclude_calendars = models.JSONField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "tasks"
        indexes = [
            models.Index(fields=["status", "next_run_at"], name="tasks_due_idx"),
            models.Index(fields=["tenant_id", "id"], name="tasks_tenant_idx"),
            # Counts a tenant's active tasks from the index alone (the active-task limit).
            models.Index(fields=["tenant_id", "status"], name="tasks_tenant_status_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "idempotency_key"], name="tasks_tenant_idem_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def is_one_shot(self) -> bool:
        return self.run_at is not None


class TaskLabel(models.Model):
    """One label of one task, so `?label=k=v` reads an index range instead of every task's JSON.

    Written only by tasks.services, in the transaction that writes the task's `labels`.
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="label_rows", db_constraint=False)
    tenant_id = TenantIdField()
    key = models.CharField(max_length=63, db_collation="utf8mb4_bin")
    value = models.CharField(max_length=63, db_collation="utf8mb4_bin")

    class Meta:
        db_table = "task_labels"
        constraints = [models.UniqueConstraint(fields=["task", "key"], name="task_labels_task_key_uniq")]
        indexes = [
            # The filtered list newest first: one range per selector, task ids in order (UUIDv7).
            models.Index(fields=["tenant_id", "key", "value", "task"], name="task_labels_select_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class TenantLimits(models.Model):
    """A tenant's limits: NULL means the setting's default (docs/explanation/fairness.md, docs/how-to/fair-share.md).

    One row per tenant, created on first use (a task create or resume, a claim of a
    capped tenant's jobs) or by staff in the admin. The row is also the tenant's lock:
    the active-task check and the claim's running count lock it first (tasks.limits),
    so two creators or two executors never both pass a limit on a count taken at once.
    """

    tenant_id = TenantIdField(primary_key=True)
    max_running_jobs = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Jobs running at once across every executor; empty = TENANT_MAX_RUNNING_JOBS.",
    )
    max_active_tasks = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Active tasks; empty = TENANT_MAX_ACTIVE_TASKS.",
    )
    note = models.CharField(max_length=200, blank=True, default="", help_text="Why this tenant's limits differ.")
    # Never below the tenant's active tasks while its row is locked; NULL = unknown. Kept by the
    # active-task check alone (tasks.limits), so a create with room counts nothing; see save().
    active_tasks_bound = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # When the bound was last made exact (the database's clock): an older bound is counted again.
    active_tasks_counted_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Paused by support during an incident (tasks.pausing): the scheduler makes no job of the
    # tenant's tasks and no claim takes its jobs. Written only by tenant_pause / tenant_resume
    # (audited); db_default: tasks.limits' raw INSERT names only the key, note and updated_at.
    paused = models.BooleanField(default=False, db_default=False)
    paused_at = models.DateTimeField(null=True, blank=True)  # the database's clock
    paused_by = models.CharField(max_length=150, blank=True, default="", db_default="")  # a staff username
    paused_reason = models.CharField(max_length=255, blank=True, default="", db_default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "tenant_limits"
        verbose_name = "tenant limits"
        verbose_name_plural = "tenant limits"
        indexes = [
            # The paused tenants without reading the others' rows (the dashboard, the admin's filter).
            models.Index(fields=["paused", "tenant_id"], name="tenant_limits_paused_idx"),
        ]
        permissions = [("pause_tenants", "Can pause and resume tenants")]

    def __str__(self) -> str:
        return f"limits of {self.tenant_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save the staff's fields only: an instance read before a create or a pause (the admin's)
        would lower the bound or undo the pause, which their own statements write."""
        if kwargs.get("force_insert"):
            self.active_tasks_bound = self.active_tasks_counted_at = None  # a new row's bound is unknown
        elif not self._state.adding and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                field.name
                for field in self._meta.concrete_fields
                if not field.primary_key and field.name not in _WRITTEN_BY_THEIR_STATEMENTS
            ]
        super().save(*args, **kwargs)


# tasks.limits keeps the bound; tasks.pausing the pause (audited).
_WRITTEN_BY_THEIR_STATEMENTS = frozenset(
    {"active_tasks_bound", "active_tasks_counted_at", "paused", "paused_at", "paused_by", "paused_reason"}
)


class TaskChangeAction(models.TextChoices):
    """What changed a task (docs/how-to/audit-trail.md)."""

    CREATE = "create"
    UPDATE = "update"
    PAUSE = "pause"
    RESUME = "resume"
    DELETE = "delete"
    AUTO_PAUSE = "auto_pause"  # the system, after dead jobs in a row (jobs.queue.task_health)
    IMPORT = "import"  # a line of POST /v1/tasks/import created or edited it
    BACKFILL = "backfill"
    COMPLETE = "complete"  # the system, when the schedule has no run left


class TaskChange(models.Model):
    """One change of one task: who, when, and each changed field's old and new value (secrets masked).

    Written only by tasks.changes, in the transaction of the change it records; read by the
    API (GET /v1/tasks/{id}/changes) and the console; purged after AUDIT_RETENTION_DAYS by the
    archiver. No foreign key: a task row is never deleted (soft delete), and the purge and the
    change's insert must not take locks on tasks beyond the change's own.
    """

    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)  # UUIDv7: newest first is id order
    task_id = BinaryUUIDField()
    tenant_id = TenantIdField()
    action = models.CharField(max_length=16, choices=TaskChangeAction.choices)
    # "token:<sub>", "tenant:<id>" (a token without a subject), "staff:<username>" or "system".
    actor = models.CharField(max_length=200)
    at = models.DateTimeField()
    version = models.PositiveIntegerField(null=True, blank=True)  # the task's version after the change
    # [{"field", "old", "new", "masked", "truncated"}]: bounded by tasks.changes (values cut, secrets masked).
    changes = models.JSONField(default=list)

    class Meta:
        db_table = "task_changes"
        indexes = [
            # A task's changes newest first, one tenant's only: keyset on id within (tenant, task).
            models.Index(fields=["tenant_id", "task_id", "id"], name="task_changes_task_idx"),
            # The retention purge, oldest first, in bounded batches.
            models.Index(fields=["at"], name="task_changes_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} of {self.task_id} by {self.actor}"
