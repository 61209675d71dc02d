"""The SQL history store's table: `job_history`, shaped like the Cassandra table.

Primary key (tenant_id, task_id, scheduled_at, job_id), read newest first, as
Cassandra's ((tenant_id, task_id, bucket), scheduled_at DESC, job_id DESC): a
B-tree needs no month bucket to keep a partition small. UNIQUE (tenant_id,
job_id) plays job_by_id. `expires_at` replaces Cassandra's TTL; the archiver
purges expired rows and reads ignore them meanwhile. The adapter writes and
reads through raw SQL (history/sql/history.sql); this model owns the schema.
"""

from __future__ import annotations

from django.db import models

from domain.ids import BinaryUUIDField
from domain.tenants import TenantIdField


class HistoryEntry(models.Model):
    pk = models.CompositePrimaryKey("tenant_id", "task_id", "scheduled_at", "job_id")
    tenant_id = TenantIdField()
    task_id = BinaryUUIDField()
    scheduled_at = models.DateTimeField()
    job_id = BinaryUUIDField()

    status = models.CharField(max_length=16)
    attempt = models.PositiveIntegerField()
    max_attempts = models.PositiveIntegerField()
    priority = models.PositiveSmallIntegerField()
    request_method = models.CharField(max_length=7)
    request_url = models.CharField(max_length=2048)
    http_status = models.PositiveSmallIntegerField(null=True)
    error = models.CharField(max_length=1024, null=True)
    response_body = models.TextField(null=True)
    started_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)
    attempts = models.TextField(null=True)  # the attempt log, JSON text (domain.attempt_log)
    labels = models.TextField(null=True)  # the task's labels when the job was made, JSON text

    expires_at = models.DateTimeField()

    class Meta:
        db_table = "job_history"
        constraints = [
            models.UniqueConstraint(fields=["tenant_id", "job_id"], name="job_history_by_id_uniq"),
        ]
        indexes = [models.Index(fields=["expires_at"], name="job_history_expiry_idx")]

    def __str__(self) -> str:
        return f"history of job {self.job_id}"
