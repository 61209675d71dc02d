"""Database builders for the executor tests: many jobs fast, and the database's clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from domain.ids import new_id
from jobs.models import Job, JobStatus


def db_now() -> datetime:
    """NOW(3) on the database: the only clock the queue uses."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOW(3)")
        return cursor.fetchone()[0].replace(tzinfo=UTC)


def bulk_jobs(count: int, *, url: str = "https://example.com/hook", **overrides: Any) -> list[uuid.UUID]:
    """Insert `count` pending jobs (each its own task id, no task rows needed); return their ids."""
    now = overrides.pop("next_attempt_at", None) or db_now()
    jobs = []
    for _ in range(count):
        fields: dict[str, Any] = {
            "id": new_id(),
            "tenant_id": "tenant-a",
            "task_id": new_id(),
            "scheduled_at": now,
            "status": JobStatus.PENDING,
            "priority": 5,
            "attempt": 0,
            "max_attempts": 3,
            "next_attempt_at": now,
            "timeout_seconds": 5,
            "backoff_base_seconds": 10,
            "request_method": "POST",
            "request_url": url,
            "request_headers": {},
            "request_body": "",
        }
        fields.update(overrides)
        jobs.append(Job(**fields))
    Job.objects.bulk_create(jobs, batch_size=1000)
    return [job.id for job in jobs]
