"""Pause and resume a whole tenant (support staff, during an incident): a flag on its `tenant_limits` row.

While a tenant is paused the scheduler makes no job of its tasks (their next_run_at
stays where it was: jobs/sql/scheduler.sql skips them) and no claim takes its jobs
(a paused tenant's running-jobs cap is 0: tasks.limits; the round-1 claim skips
them in SQL). Its pending jobs stay pending, jobs already running finish, and its
API keeps working. Resuming clears the flag: the scheduler then reaches the
tasks' missed runs and applies each task's missed-runs policy, as after any
outage, and the pending jobs are claimed as usual.

The admin calls these inside the transaction that writes its audit entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models.functions import Now

from domain.tenants import is_valid_tenant_id
from tasks import limits
from tasks.models import Task, TenantLimits

MAX_REASON_LENGTH = TenantLimits._meta.get_field("paused_reason").max_length or 255


@dataclass(frozen=True)
class TenantPause:
    """A paused tenant: since when (the database's clock), by whom, why."""

    tenant_id: str
    paused_at: datetime | None
    paused_by: str
    reason: str


def tenant_pause(*, tenant_id: str, paused_by: str, reason: str) -> bool:
    """Pause the tenant, creating its limits row if it has none; False when it was already paused."""
    reason = reason.strip()
    if not is_valid_tenant_id(tenant_id):
        raise ValueError(f"not a tenant id: {tenant_id!r}")
    if not reason or len(reason) > MAX_REASON_LENGTH:
        raise ValueError(f"a reason is 1-{MAX_REASON_LENGTH} characters")
    with transaction.atomic():
        limits.lock_tenants([tenant_id])  # the row exists from here, locked until commit
        # paused=False in the WHERE: of two agents pausing at once, the second changes nothing
        # and keeps the first one's who, when and why.
        changed = TenantLimits.objects.filter(tenant_id=tenant_id, paused=False).update(
            paused=True, paused_at=Now(), paused_by=paused_by, paused_reason=reason, updated_at=Now()
        )
    return changed == 1


def tenant_resume(*, tenant_id: str) -> bool:
    """Resume the tenant; False when it was not paused (or has no limits row)."""
    changed = TenantLimits.objects.filter(tenant_id=tenant_id, paused=True).update(
        paused=False, paused_at=None, paused_by="", paused_reason="", updated_at=Now()
    )
    return changed == 1


def tenant_pause_get(*, tenant_id: str) -> TenantPause | None:
    """The tenant's pause, or None when it is not paused."""
    row = (
        TenantLimits.objects.filter(tenant_id=tenant_id, paused=True)
        .values_list("paused_at", "paused_by", "paused_reason")
        .first()
    )
    return None if row is None else TenantPause(tenant_id, *row)


def tenant_has_tasks(*, tenant_id: str) -> bool:
    """Whether any task (of any status) carries this tenant id: a pause of an unknown id is likely a typo."""
    # tasks_tenant_idx (tenant_id, id): one index dive.
    return Task.objects.filter(tenant_id=tenant_id).exists()
