"""A job: one execution of a task. The `jobs` table *is* the queue.

Every state change is a compare-and-set in raw SQL run by `jobs.queue` (the only
code that writes to this table; statements in jobs/sql/); this model exists for
migrations, reads, and the admin. `fence` only ever grows (every claim and every
give-back adds one): it is the fencing token every guarded write must match.
`attempt` counts the calls made (X-Attempt).
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from domain.ids import BinaryUUIDField, new_id
from domain.tenants import ExactCharField, TenantIdField
from tasks.priority import DEFAULT_PRIORITY


class JobStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    DEAD = "dead"
    CANCELLED = "cancelled"  # never to run: cancelled, discarded from the DLQ, or its task paused or deleted
    # Never called, by the task's own rules: its overlap policy or an excluded calendar date. The
    # reason is in `error` (e.g. "overlap:skip", "calendar:holidays"); terminal from its insert.
    SKIPPED = "skipped"


class Job(models.Model):
    id = BinaryUUIDField(primary_key=True, default=new_id, editable=False)
    tenant_id = TenantIdField()
    # No FK constraint: the queue must not take parent-row locks on every insert.
    task = models.ForeignKey(
        "tasks.Task", on_delete=models.DO_NOTHING, db_constraint=False, db_index=False, related_name="jobs"
    )
    scheduled_at = models.DateTimeField()

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    priority = models.PositiveSmallIntegerField(default=DEFAULT_PRIORITY)  # tasks.priority.PRIORITIES
    attempt = models.PositiveIntegerField(default=0)  # calls made: a give-back undoes its claim's count
    # The fencing token: +1 on every claim and every give-back, never less (jobs/sql/executor.sql).
    fence = models.PositiveBigIntegerField(default=0, db_default=0)
    max_attempts = models.PositiveIntegerField(default=5)
    next_attempt_at = models.DateTimeField()
    timeout_seconds = models.PositiveIntegerField(default=30)
    backoff_base_seconds = models.PositiveIntegerField(default=10)

    worker_id = models.CharField(max_length=255, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=1024, null=True, blank=True)
    response_body = models.TextField(null=True, blank=True)  # truncated by the executor
    # The attempt log, JSON text appended by the fenced result write (domain.records).
    attempts = models.TextField(null=True, blank=True)
    # The task's labels at scheduling time, JSON text copied from tasks.labels with the snapshot.
    labels = models.TextField(null=True, blank=True)

    # The request snapshot the executor sends, copied from the task at scheduling time.
    request_method = models.CharField(max_length=7)
    request_url = models.CharField(max_length=2048)
    request_headers = models.JSONField(default=dict, blank=True)
    request_body = models.TextField(blank=True, default="")
    secret_ref = models.CharField(max_length=255, null=True, blank=True)

    updated_at = models.DateTimeField(auto_now=True)

    # The pending jobs' keys of the two due indexes, NULL for every other status (MariaDB has no
    # partial index). Stored columns, kept by the server, so no statement can forget them. A job's
    # entries move once when it is claimed, and stay put when it succeeds or dies: with `status`
    # itself in these indexes, every result rewrote both (measured, server CPU per job, a claim and
    # a result of 500: 135 -> 104-114 us with these keys and the reconciler's index dropped).
    pending_priority = models.GeneratedField(
        expression=models.Case(models.When(status=JobStatus.PENDING, then="priority")),
        output_field=models.PositiveSmallIntegerField(null=True),
        db_persist=True,
    )
    pending_tenant = models.GeneratedField(
        expression=models.Case(models.When(status=JobStatus.PENDING, then="tenant_id")),
        output_field=TenantIdField(null=True),
        db_persist=True,
    )

    class Meta:
        db_table = "jobs"
        indexes = [
            # Due pending jobs by priority (the claim's probe, the plain claim, the dashboard).
            models.Index(fields=["pending_priority", "next_attempt_at"], name="jobs_claim_idx"),
            # The fair claim: a tenant's due jobs in its own priority order (jobs.fairness).
            models.Index(fields=["pending_tenant", "priority", "next_attempt_at"], name="jobs_tenant_due_idx"),
            # Also the reconciler's: the running jobs are one range of it, and the executors' slots bound them.
            models.Index(fields=["status", "finished_at"], name="jobs_archiver_idx"),
            models.Index(fields=["tenant_id", "status"], name="jobs_dlq_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["task", "scheduled_at"], name="jobs_task_scheduled_uniq"),
        ]
        permissions = [
            ("retry_dead_jobs", "Can retry dead jobs"),
            ("cancel_pending_jobs", "Can cancel pending jobs"),
            ("discard_dead_jobs", "Can discard dead jobs"),
        ]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"


class DeadJobManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(status=JobStatus.DEAD)


class DeadJob(Job):
    """The dead-letter queue as its own admin: jobs that ran out of attempts (proxy, no table)."""

    objects: ClassVar[DeadJobManager] = DeadJobManager()

    class Meta:
        proxy = True
        verbose_name = "dead job"
        verbose_name_plural = "dead jobs"


class RunRequest(models.Model):
    """An Idempotency-Key of `POST /v1/tasks/{id}/run` and the job it made: the same key answers the same job.

    Apart from `jobs` so the queue's hot table carries no extra unique index; kept after the
    job is archived (the replay then reads the job from the history) for RUN_REQUEST_RETENTION_SECONDS,
    then purged by the archiver. Every statement on it runs from jobs/queue/run_requests.py.
    """

    task_id = BinaryUUIDField()
    tenant_id = TenantIdField()
    idempotency_key = ExactCharField(max_length=255)
    job_id = BinaryUUIDField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "run_requests"
        constraints = [models.UniqueConstraint(fields=["task_id", "idempotency_key"], name="run_requests_key_uniq")]
        indexes = [models.Index(fields=["created_at"], name="run_requests_created_idx")]  # the archiver's purge

    def __str__(self) -> str:
        return f"run of {self.task_id} under {self.idempotency_key!r}"
