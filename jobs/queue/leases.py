"""The reconciler's statement: the other half of the lease."""

from __future__ import annotations

from django.db import connection

from jobs.queue.statements import STATEMENTS


def sweep_expired_leases(*, limit: int) -> int:
    """Return up to `limit` running jobs whose lease expired (autocommit: one short statement); how many."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["reconcile_expired_leases"].bind({"limit": limit}))
        return cursor.rowcount
