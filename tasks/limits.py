"""Per-tenant limits: the settings' defaults, staff overrides in `tenant_limits`, and the row lock.

Two limits (docs/explanation/fairness.md, docs/how-to/fair-share.md): jobs running at once across every
executor (`TENANT_MAX_RUNNING_JOBS`, enforced by the executor's claim) and active
tasks (`TENANT_MAX_ACTIVE_TASKS`, enforced when a task is created or resumed).
A NULL override means the default; a default of 0 means no limit.

Both checks read first and write after, so each one locks the tenant's row
first (creating it if needed) and reads under that lock: a second creator, or a
second executor claiming for the same tenant, waits for the first to commit and
then reads what it wrote. Rows are locked in tenant order, so two claims that
lock overlapping sets never deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import connection
from django.db.models import Q

from tasks.models import TaskStatus, TenantLimits

# Creates the missing rows and takes an exclusive lock on every row, existing or new, until
# commit (ON DUPLICATE KEY UPDATE locks the duplicate row X; INSERT IGNORE would take S, and two
# S holders upgrading to X deadlock). The no-op assigns `note`, not the key: behind vtgate
# tenant_id is the sharding column, which no statement may assign (VT12001).
_LOCK_ROWS = "INSERT INTO tenant_limits (tenant_id, note, updated_at) VALUES {rows} ON DUPLICATE KEY UPDATE note = note"


class ActiveTaskLimitReached(Exception):
    """The tenant already has its maximum of active tasks (HTTP 409, problem type active-task-limit)."""

    def __init__(self, *, tenant_id: str, limit: int, active: int) -> None:
        super().__init__(f"tenant {tenant_id} has {active} active tasks (limit {limit})")
        self.limit = limit
        self.active = active


def _default(value: int) -> int | None:
    return value or None  # 0 = no limit


def lock_tenants(tenant_ids: Iterable[str]) -> None:
    """Lock each tenant's limits row until the transaction ends (creating rows that do not exist)."""
    ordered = sorted(set(tenant_ids))
    if not ordered:
        return
    with connection.cursor() as cursor:
        # The same order in every caller: two overlapping lock sets wait, never deadlock.
        cursor.execute(
            _LOCK_ROWS.replace("{rows}", ", ".join(["(%s, '', NOW(6))"] * len(ordered))),
            ordered,
        )


def max_running_jobs(tenant_ids: Iterable[str], *, lock: bool) -> dict[str, int]:
    """The running-jobs cap of every capped tenant among `tenant_ids` (uncapped ones are absent).

    A paused tenant (tasks.pausing) is capped at 0: the claim gives it no slot. With
    `lock`, the capped tenants' rows are locked until commit and read under the lock:
    the claim then counts their running jobs knowing no other claim for them is between
    its count and its commit, and a pause or resume committed meanwhile is seen.
    """
    wanted = set(tenant_ids)
    if not wanted:
        return {}
    default = _default(settings.TENANT_MAX_RUNNING_JOBS)
    overrides = _running_overrides(wanted)
    capped = wanted if default is not None else set(overrides)
    if not capped:
        return {}
    if lock:
        lock_tenants(capped)
        overrides = _running_overrides(capped)  # staff may have changed one since the first read
    caps = {tenant: overrides.get(tenant, default) for tenant in capped}
    return {tenant: cap for tenant, cap in caps.items() if cap is not None}


def _running_overrides(tenant_ids: set[str]) -> dict[str, int]:
    rows = TenantLimits.objects.filter(Q(max_running_jobs__isnull=False) | Q(paused=True), tenant_id__in=tenant_ids)
    caps: dict[str, int] = {}
    for tenant, cap, paused in rows.values_list("tenant_id", "max_running_jobs", "paused"):
        if paused:
            caps[tenant] = 0  # paused (tasks.pausing): no slot, whatever its cap
        elif cap is not None:
            caps[tenant] = cap
    return caps


# The active-task check keeps, in the tenant's row, a bound never below its active tasks. The
# check is the only way in (a create, a resume, an import's line): it raises the bound with the task
# it admits, under the tenant's lock and in the same transaction, and pauses, deletes and
# completions only lower the count. While bound + 1 is within the limit, one UPDATE (PRIMARY)
# admits the task and counts nothing: a COUNT reads every active task of the tenant under its lock
# (docs/benchmarks/issue33-active-task-bound.md). Otherwise, or when the bound was made exact more
# than BOUND_TRUSTED_SECONDS ago, the tasks are counted and the bound made exact. The age bounds
# what an activation without the check costs: during a rolling deploy from
# (or a rollback to) code before the bound, the old pods admit tasks without raising it, and a
# tenant can pass its limit by those until its bound is counted again.
# Behind vtgate each statement names tenant_id, the sharding column of both tables.
BOUND_TRUSTED_SECONDS = 600
_ADMIT_WITHIN_BOUND = (
    "UPDATE tenant_limits SET active_tasks_bound = active_tasks_bound + 1"
    " WHERE tenant_id = %s AND active_tasks_bound < COALESCE(max_active_tasks, %s)"
    " AND active_tasks_counted_at > NOW(6) - INTERVAL %s SECOND"
)
# The override and the count in one round trip, rooted at the tenant's row, which lock_tenants
# created; tasks_tenant_status_idx (tenant_id, status): counted from the index alone.
_LIMIT_AND_ACTIVE = (
    "SELECT l.max_active_tasks,"
    " (SELECT COUNT(*) FROM tasks t WHERE t.tenant_id = l.tenant_id AND t.status = %s)"
    " FROM tenant_limits l WHERE l.tenant_id = %s"
)
_SET_BOUND = "UPDATE tenant_limits SET active_tasks_bound = %s, active_tasks_counted_at = NOW(6) WHERE tenant_id = %s"
_FORGET_BOUND = (
    "UPDATE tenant_limits SET active_tasks_bound = NULL, active_tasks_counted_at = NULL WHERE tenant_id = %s"
)
_OVERRIDE_AND_BOUND = "SELECT max_active_tasks, active_tasks_bound FROM tenant_limits WHERE tenant_id = %s"


def ensure_room_for_active_task(tenant_id: str) -> None:
    """Raise ActiveTaskLimitReached unless one more task of this tenant may be active.

    Call inside the transaction that then activates the task: the tenant's row stays
    locked until it commits, so a concurrent create or resume finds this task in the bound.
    """
    lock_tenants([tenant_id])
    check_room_for_active_task(tenant_id)


def admit_active_task(tenant_id: str) -> None:
    """ensure_room_for_active_task in one statement while the tenant's bound admits the task.

    The UPDATE that raises the bound locks the tenant's row until commit, as lock_tenants does:
    a concurrent create waits for it and then reads the bound it wrote. When it matches no row
    (no limits row yet, a bound at the limit or counted too long ago), the row is locked and
    checked as ensure_room_for_active_task does (the lock the UPDATE may have waited for is that
    same row's). Without a default limit (TENANT_MAX_ACTIVE_TASKS = 0) only an override limits
    a tenant, which the check reads under the lock: it goes there at once.
    """
    if not admit_within_bound(tenant_id):
        ensure_room_for_active_task(tenant_id)


def keeps_a_bound() -> bool:
    """Whether tenants' bounds are kept: there is a default limit (admit_within_bound can admit)."""
    return _default(settings.TENANT_MAX_ACTIVE_TASKS) is not None


def admit_within_bound(tenant_id: str) -> bool:
    """Admit one more active task of the tenant by raising its bound, in one UPDATE; False: not admitted.

    True locks the tenant's row until commit. False (no limits row, a bound at the limit or
    counted too long ago, no default limit) locks nothing: ensure_room_for_active_task decides,
    in a transaction that holds nothing of the task yet (its count would see it).
    """
    default = _default(settings.TENANT_MAX_ACTIVE_TASKS)
    if default is None:
        return False
    with connection.cursor() as cursor:
        cursor.execute(_ADMIT_WITHIN_BOUND, [tenant_id, default, BOUND_TRUSTED_SECONDS])
        return cursor.rowcount == 1


def check_room_for_active_task(tenant_id: str) -> None:
    """ensure_room_for_active_task for a caller that already holds the tenant's lock (lock_tenants).

    Admits one task: the caller activates at most one task in this transaction.
    """
    default = _default(settings.TENANT_MAX_ACTIVE_TASKS)
    with connection.cursor() as cursor:
        cursor.execute(_ADMIT_WITHIN_BOUND, [tenant_id, default, BOUND_TRUSTED_SECONDS])
        if cursor.rowcount == 1:
            return
        if default is None:
            # Only an override limits this tenant: without one, nothing is counted and nothing kept,
            # and a limit set later finds the bound unknown.
            cursor.execute(_OVERRIDE_AND_BOUND, [tenant_id])
            row = cursor.fetchone()
            if row is not None and row[0] is None:
                if row[1] is not None:
                    cursor.execute(_FORGET_BOUND, [tenant_id])
                return
        cursor.execute(_LIMIT_AND_ACTIVE, [TaskStatus.ACTIVE.value, tenant_id])
        row = cursor.fetchone()
        if row is None:
            raise RuntimeError(f"tenant {tenant_id}: lock_tenants first (its limits row does not exist)")
        override, active = row
        limit = override if override is not None else default
        if limit is not None and active >= limit:
            raise ActiveTaskLimitReached(tenant_id=tenant_id, limit=limit, active=active)
        cursor.execute(_SET_BOUND, [active + 1, tenant_id])
