"""The reads behind the queue's gauges (workers/queue_stats.py): bounded, for one replica every interval."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from jobs.queue.statements import QUERIES


def holds_stats_lock(*, name: str) -> bool:
    """Take (or keep) the named lock on this session without waiting; True when this session holds it.

    Behind vtgate (DATABASE_VITESS) never: a shard-targeted session cannot take GET_LOCK (vttablet
    wants a reserved connection), so no loop reports the queue gauges there (docs/scaling.md).
    """
    if settings.DATABASE_VITESS:
        return False
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["stats_lock"], {"name": name})
        (held,) = cursor.fetchone()
    return held == 1


@dataclass(frozen=True)
class QueueFigures:
    """One statement's reading of the queue: every figure from the same snapshot."""

    counts: dict[str, int]  # jobs per status (up to the cap), expired_leases, oldest_due_pending_ms
    dead_top: dict[str, int]  # the tenants with most dead jobs, most first (empty when none were asked for)
    dead_scanned: int  # dead jobs read for dead_top in all (at most the scan)


def queue_figures(*, cap: int, scan: int, tenants: int) -> QueueFigures:
    """The queue's figures and the `tenants` with most dead jobs among the newest `scan`, in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["stats_queue"], {"cap": cap, "hours": None, "scan_rows": scan, "tenants": tenants})
        rows = cursor.fetchall()
    counts = {figure: int(value or 0) for figure, _, value, _ in rows if figure != "dead_by_tenant"}
    dead = [(tenant, int(value), int(scanned)) for figure, tenant, value, scanned in rows if figure == "dead_by_tenant"]
    return QueueFigures(
        counts=counts,
        dead_top={tenant: value for tenant, value, _ in dead},
        dead_scanned=dead[0][2] if dead else 0,
    )
