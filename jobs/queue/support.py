"""The statements of manual retry and the dead-letter summary (tenant API and support console)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from jobs.queue.statements import STATEMENTS


def requeue_dead_job(*, job_id: uuid.UUID, tenant_id: str | None) -> bool:
    """dead → pending for the same job (`tenant_id=None`: any tenant's); True if it was dead."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["retry_dead_job"].bind({"job_id": job_id.bytes, "tenant_id": tenant_id}))
        return cursor.rowcount == 1


def job_status(*, job_id: uuid.UUID, tenant_id: str | None) -> tuple[str, str | None] | None:
    """The job's status in the queue and its task's (None: no task row), or None (archived, never existed,
    another tenant's)."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["retry_job_status"].bind({"job_id": job_id.bytes, "tenant_id": tenant_id}))
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1])


@dataclass(frozen=True)
class TenantDead:
    tenant_id: str
    dead: int
    oldest: datetime | None


@dataclass(frozen=True)
class DeadCounts:
    tenants: list[TenantDead]
    scanned: int  # rows read: at most `scan_rows`


def dead_jobs_by_tenant(*, scan_rows: int, tenants: int) -> DeadCounts:
    """Dead jobs per tenant over at most the newest `scan_rows` dead jobs, the `tenants` with most first."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["admin_dead_by_tenant"].bind({"scan_rows": scan_rows, "tenants": tenants}))
        rows = cursor.fetchall()
    return DeadCounts(
        tenants=[TenantDead(tenant_id=row[0], dead=int(row[1]), oldest=row[2]) for row in rows],
        scanned=int(rows[0][3]) if rows else 0,
    )
