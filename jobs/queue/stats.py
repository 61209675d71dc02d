"""The reads behind the queue's gauges (workers/queue_stats.py): bounded, for one replica every interval."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from jobs.queue.statements import QUERIES


def holds_stats_lock(*, name: str) -> bool:
    """Take (or keep) the named lock on this session without waiting; True when this session holds it."""
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["stats_lock"], {"name": name})
        (held,) = cursor.fetchone()
    return held == 1


def queue_figures(*, cap: int) -> dict[str, int]:
    """Jobs per status (each counted up to `cap`), expired leases, and the oldest due pending job's age in ms."""
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["stats_queue"], {"cap": cap})
        return {figure: int(value or 0) for figure, value in cursor.fetchall()}


@dataclass(frozen=True)
class DeadByTenant:
    top: dict[str, int]  # the tenants with most dead jobs, most first
    scanned: int  # dead jobs read in all (at most the scan)


def dead_by_tenant(*, scan: int, tenants: int) -> DeadByTenant:
    """Dead jobs per tenant over the newest `scan` dead jobs, the `tenants` with most."""
    with connection.cursor() as cursor:
        cursor.execute(QUERIES["stats_dead_by_tenant"], {"scan": scan, "tenants": tenants})
        rows = cursor.fetchall()
    return DeadByTenant(top={tenant: int(dead) for tenant, dead, _ in rows}, scanned=int(rows[0][2]) if rows else 0)
