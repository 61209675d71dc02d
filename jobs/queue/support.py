"""The statements of manual retry, cancel, discard and the dead-letter summary (tenant API and support console)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction

from jobs.queue.statements import STATEMENTS


def requeue_dead_jobs(*, due_in: Mapping[uuid.UUID, float], tenant_id: str | None) -> int:
    """dead → pending for the jobs of `due_in`, each due that many seconds from now; how many changed.

    `tenant_id=None`: any tenant's (support staff). The one retry statement: single and bulk retry
    run it alike, so only an active task's dead job is ever retried, whoever asks.
    """
    rows = [(job_id.bytes, round(seconds * 1_000_000)) for job_id, seconds in due_in.items()]
    if not rows:
        return 0
    with connection.cursor() as cursor:
        sql, params = STATEMENTS["retry_dead_jobs"].bind({"tenant_id": tenant_id}, rows, columns=("id", "delay_us"))
        cursor.execute(sql, params)
        return cursor.rowcount


def requeue_dead_job(*, job_id: uuid.UUID, tenant_id: str | None) -> bool:
    """dead → pending for the same job, due now (`tenant_id=None`: any tenant's); True if it was dead."""
    return requeue_dead_jobs(due_in={job_id: 0.0}, tenant_id=tenant_id) == 1


def requeue_dead_jobs_staggered(*, job_ids: Sequence[uuid.UUID], spacing_seconds: float) -> dict[uuid.UUID, str]:
    """Requeue the dead ones of `job_ids` (support staff: any tenant's), due `spacing_seconds` apart in order.

    One short transaction of two or three statements, whatever the count: lock the jobs and read
    their status, run the retry statement on the dead ones (the first due now, the next one
    spacing later, and so on), and only when it changed fewer, read why. Returns each found job's
    status before (a job missing is gone: archived or never existed); those found 'dead' are now
    pending, but for "dead:<task status>" (a paused or deleted task fires nothing).
    """
    ordered = list(dict.fromkeys(job_ids))
    if not ordered:
        return {}
    with transaction.atomic():
        with connection.cursor() as cursor:
            sql, params = STATEMENTS["retry_lock_jobs"].bind(rows=[(job_id.bytes,) for job_id in ordered])
            cursor.execute(sql, params)
            statuses = {uuid.UUID(bytes=bytes(job_id)): status for job_id, status in cursor.fetchall()}
        dead = [job_id for job_id in ordered if statuses.get(job_id) == "dead"]
        changed = requeue_dead_jobs(
            due_in={job_id: slot * spacing_seconds for slot, job_id in enumerate(dead)}, tenant_id=None
        )
        if changed < len(dead):
            # Locked since the read, so what stayed dead is what the statement's task guard kept.
            for job_id, (status, task_status) in jobs_status(job_ids=dead, tenant_id=None).items():
                if status == "dead":
                    statuses[job_id] = f"dead:{task_status}"
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


def jobs_status(*, job_ids: Sequence[uuid.UUID], tenant_id: str | None) -> dict[uuid.UUID, tuple[str, str | None]]:
    """Each found job's status in the queue and its task's (None: no task row); a job not found is
    archived, never existed, or another tenant's."""
    if not job_ids:
        return {}
    with connection.cursor() as cursor:
        sql, params = STATEMENTS["retry_jobs_status"].bind(
            {"tenant_id": tenant_id}, rows=[(job_id.bytes,) for job_id in job_ids]
        )
        cursor.execute(sql, params)
        return {uuid.UUID(bytes=bytes(row[0])): (row[1], row[2]) for row in cursor.fetchall()}


def job_status(*, job_id: uuid.UUID, tenant_id: str | None) -> tuple[str, str | None] | None:
    """The job's status in the queue and its task's (None: no task row), or None (archived, never existed,
    another tenant's)."""
    return jobs_status(job_ids=[job_id], tenant_id=tenant_id).get(job_id)


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
        values = {"hours": None, "scan_rows": scan_rows, "tenants": tenants}
        cursor.execute(*STATEMENTS["dead_by_tenant"].bind(values))
        rows = cursor.fetchall()
    return DeadCounts(
        tenants=[TenantDead(tenant_id=row[0], dead=int(row[1]), oldest=row[2]) for row in rows],
        scanned=int(rows[0][3]) if rows else 0,
    )


def _dead_jobs_by_tenant_scattered(*, scan_rows: int, tenants: int) -> DeadCounts:
    """dead_jobs_by_tenant behind vtgate: one bounded scatter read, counted here."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["dead_newest"].bind({"hours": None, "scan_rows": scan_rows}))
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
