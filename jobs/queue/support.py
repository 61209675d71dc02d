"""The statements of manual retry, cancel, discard and the dead-letter summary (tenant API and support console)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction

from jobs.queue.statements import STATEMENTS
from tasks.models import Task


def requeue_dead_job(*, job_id: uuid.UUID, tenant_id: str | None) -> bool:
    """dead → pending for the same job (`tenant_id=None`: any tenant's); True if it was dead."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["retry_dead_job"].bind({"job_id": job_id.bytes, "tenant_id": tenant_id}))
        return cursor.rowcount == 1


def requeue_dead_jobs_staggered(*, job_ids: Sequence[uuid.UUID], spacing_seconds: float) -> dict[uuid.UUID, str]:
    """Requeue the dead ones of `job_ids` (support staff: any tenant's), due `spacing_seconds` apart in order.

    One short transaction of two statements, whatever the count: lock the jobs and read
    their status, then one UPDATE of the dead ones, the first due now, the next one
    spacing later, and so on. Returns each found job's status before (a job missing is
    gone: archived or never existed); those found 'dead' are now pending.
    """
    ordered = list(dict.fromkeys(job_ids))
    if not ordered:
        return {}
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = STATEMENTS["retry_lock_jobs"].bind(rows=[(job_id.bytes,) for job_id in ordered])
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        statuses = {uuid.UUID(bytes=bytes(job_id)): status for job_id, status, _ in rows}
        # A paused or deleted task fires nothing: its dead jobs stay put, reported as "dead:<task status>".
        task_of = {
            uuid.UUID(bytes=bytes(job_id)): bytes(task_id) for job_id, status, task_id in rows if status == "dead"
        }
        stopped = dict(
            Task.objects.filter(pk__in=[uuid.UUID(bytes=t) for t in set(task_of.values())])
            .exclude(status="active")
            .values_list("id", "status")
        )
        for job_id, task_id in task_of.items():
            if uuid.UUID(bytes=task_id) in stopped:
                statuses[job_id] = f"dead:{stopped[uuid.UUID(bytes=task_id)]}"
        dead = [job_id for job_id in ordered if statuses.get(job_id) == "dead"]
        if dead:
            delays = [(job_id.bytes, round(slot * spacing_seconds * 1_000_000)) for slot, job_id in enumerate(dead)]
            sql, params = STATEMENTS["retry_dead_jobs_staggered"].bind(rows=delays, columns=("id", "delay_us"))
            cursor.execute(sql, params)
            # Locked by this transaction since the read, so every dead one must change.
            if cursor.rowcount != len(dead):
                raise RuntimeError(f"bulk retry changed {cursor.rowcount} of {len(dead)} locked dead jobs")
    return statuses


def cancel_pending_job(*, job_id: uuid.UUID, tenant_id: str | None, reason: str) -> bool:
    """pending → cancelled (`tenant_id=None`: any tenant's); True if it was pending."""
    values = {"job_id": job_id.bytes, "tenant_id": tenant_id, "reason": reason}
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["cancel_pending_job"].bind(values))
        return cursor.rowcount == 1


def discard_dead_job(*, job_id: uuid.UUID, tenant_id: str | None) -> bool:
    """dead → cancelled, keeping its last error (`tenant_id=None`: any tenant's); True if it was dead."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["discard_dead_job"].bind({"job_id": job_id.bytes, "tenant_id": tenant_id}))
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
    if settings.DATABASE_VITESS:
        return _dead_jobs_by_tenant_scattered(scan_rows=scan_rows, tenants=tenants)
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["admin_dead_by_tenant"].bind({"scan_rows": scan_rows, "tenants": tenants}))
        rows = cursor.fetchall()
    return DeadCounts(
        tenants=[TenantDead(tenant_id=row[0], dead=int(row[1]), oldest=row[2]) for row in rows],
        scanned=int(rows[0][3]) if rows else 0,
    )


def _dead_jobs_by_tenant_scattered(*, scan_rows: int, tenants: int) -> DeadCounts:
    """dead_jobs_by_tenant behind vtgate: one bounded scatter read, counted here."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["admin_dead_newest"].bind({"scan_rows": scan_rows}))
        rows = cursor.fetchall()
    counts: dict[str, TenantDead] = {}
    for tenant_id, finished_at in rows:
        seen = counts.get(tenant_id)
        counts[tenant_id] = TenantDead(
            tenant_id=tenant_id,
            dead=(seen.dead if seen else 0) + 1,
            oldest=finished_at if seen is None else min(seen.oldest, finished_at),
        )
    ranked = sorted(counts.values(), key=lambda row: (-row.dead, row.tenant_id))
    return DeadCounts(tenants=ranked[:tenants], scanned=len(rows))
