"""The queue at a glance for support staff: the reads behind the admin's dashboard page.

Each figure is one bounded read (jobs/sql/dashboard.sql names the index each
uses); a page refresh costs a handful of milliseconds with a million jobs in the
table (`python -m bench.dashboard`). Counts stop at a cap ("at least"), samples
are per minute, so no refresh ever reads the table whole.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from django.db import connection

from jobs.queue.statements import QUERIES, STATEMENTS, Statement
from tasks.priority import PRIORITIES

# cancelled: cancelled by the tenant or support, discarded from the DLQ, or its task paused or deleted
# (or replaced by a newer run: overlap `replace`); skipped: never called by the task's own rules
# (its overlap policy, an excluded calendar date).
STATUSES = ("pending", "running", "succeeded", "dead", "cancelled", "skipped")
COUNT_CAP = 10_000  # each status count stops here ("at least")
DUE_LEVEL_CAP = 2_000  # each priority level's due backlog count stops here
FINISHED_CAP = 1_000  # finished jobs counted per minute and status; past it the rate is estimated
LEASE_SCAN_ROWS = 20_000  # running jobs read to group by worker (the slots of every executor)
WORKERS_SHOWN = 50
MINUTES = 15  # the throughput and lateness window
LATENESS_SAMPLE = 100  # jobs sampled per minute and status
DEAD_HOURS = 24
DEAD_SCAN_ROWS = 5_000
DEAD_TENANTS_SHOWN = 8
PAUSED_TENANTS_SHOWN = 20


def _template_branch(name: str) -> str:
    return "\n".join(line for line in QUERIES[name].splitlines() if not line.lstrip().startswith("--"))


def _per_minute(name: str, minutes: int) -> Statement:
    """One statement for every (minute, status): UNION ALL of the template's branches."""
    branch = _template_branch(name)
    text = "\nUNION ALL\n".join(
        f"({branch.replace('{minute}', str(minute)).replace('{status}', status)})"
        for minute in range(minutes)
        for status in ("succeeded", "dead")
    )
    return Statement.compile(f"{name}_x{minutes}", text)


@lru_cache(maxsize=4)
def lateness_statement(minutes: int) -> Statement:
    return _per_minute("dashboard_lateness_minute", minutes)


@lru_cache(maxsize=4)
def finished_statement(minutes: int) -> Statement:
    return _per_minute("dashboard_finished_minute", minutes)


# One branch per level of the one priority range, compiled once.
_DUE_BRANCH = _template_branch("dashboard_due_level")
DUE_STATEMENT = Statement.compile(
    "dashboard_due_levels",
    "\nUNION ALL\n".join(f"({_DUE_BRANCH.replace('{priority}', str(level))})" for level in PRIORITIES),
)


@dataclass(frozen=True)
class Backlog:
    due: int  # pending jobs due now, each level counted up to COUNT_CAP
    capped: bool  # a level reached the cap: `due` is a lower bound
    oldest_due_seconds: float | None  # how long the oldest due job has waited; None when nothing is due
    db_now: datetime


@dataclass(frozen=True)
class WorkerLeases:
    worker_id: str
    held: int
    expired: int  # leases past their expiry the reconciler has not swept yet
    next_expiry: datetime | None
    last_claim: datetime | None


@dataclass(frozen=True)
class Minute:
    minutes_ago: int
    succeeded: int = 0
    dead: int = 0
    estimated: bool = False  # a count reached FINISHED_CAP: the figure is its rate over the minute
    late_p50_ms: int | None = None
    late_p95_ms: int | None = None
    late_max_ms: int | None = None
    sampled: int = 0


@dataclass(frozen=True)
class TenantDeadSeries:
    tenant_id: str
    total: int
    per_hour: list[int]  # oldest hour first, DEAD_HOURS values


@dataclass(frozen=True)
class PausedTenant:
    tenant_id: str
    paused_at: datetime | None
    paused_by: str
    reason: str
    pending: int  # its pending jobs, held until it is resumed (up to COUNT_CAP)


@dataclass(frozen=True)
class Dashboard:
    counts: dict[str, int]
    count_cap: int
    backlog: Backlog
    workers: list[WorkerLeases]
    leases_scanned: int
    minutes: list[Minute]  # oldest minute first
    dead_tenants: list[TenantDeadSeries]
    dead_scanned: int
    dead_scan_rows: int
    paused_tenants: list[PausedTenant]
    paused_count: int  # every paused tenant (up to COUNT_CAP), shown or not

    @property
    def leases_held(self) -> int:
        return sum(worker.held for worker in self.workers)

    @property
    def dead_capped(self) -> bool:
        return self.dead_scanned >= self.dead_scan_rows


def status_counts(*, cap: int = COUNT_CAP) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["dashboard_status_counts"].bind({"cap": cap}))
        found = {status: int(count) for status, count in cursor.fetchall()}
    return {status: found.get(status, 0) for status in STATUSES}


def due_backlog(*, cap: int = DUE_LEVEL_CAP) -> Backlog:
    with connection.cursor() as cursor:
        cursor.execute(*DUE_STATEMENT.bind({"cap": cap}))
        rows = cursor.fetchall()
    db_now = rows[0][3]
    oldest = min((row[2] for row in rows if row[2] is not None), default=None)
    waited = (db_now - oldest).total_seconds() if oldest is not None and oldest <= db_now else None
    return Backlog(
        due=sum(int(row[1]) for row in rows),
        capped=any(int(row[1]) >= cap for row in rows),
        oldest_due_seconds=waited,
        db_now=db_now,
    )


def leases_by_worker(
    *, scan_rows: int = LEASE_SCAN_ROWS, workers: int = WORKERS_SHOWN
) -> tuple[list[WorkerLeases], int]:
    """The workers holding leases, most first, and how many running jobs were read."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["dashboard_leases"].bind({"scan_rows": scan_rows, "workers": workers}))
        rows = cursor.fetchall()
    found = [
        WorkerLeases(
            worker_id=worker or "(none)", held=int(held), expired=int(expired or 0), next_expiry=nxt, last_claim=last
        )
        for worker, held, expired, nxt, last, _ in rows
    ]
    return found, int(rows[0][5]) if rows else 0


def _percentile(ordered: list[int], fraction: float) -> int:
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def finished_count(counted: int, span_us: int | None, *, cap: int) -> tuple[int, bool]:
    """The minute's count, or past the cap its estimate from the rate of the newest `cap`."""
    if counted < cap or not span_us or span_us <= 0:
        return counted, False
    return max(counted, round(counted * 60_000_000 / span_us)), True


def recent_minutes(*, minutes: int = MINUTES, sample: int = LATENESS_SAMPLE, cap: int = FINISHED_CAP) -> list[Minute]:
    """Finished jobs and claim lateness per minute, oldest minute first."""
    finished: dict[int, dict[str, int]] = defaultdict(dict)
    estimated: set[int] = set()
    late: dict[int, list[int]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(*finished_statement(minutes).bind({"cap": cap}))
        for minutes_ago, status, counted, span_us in cursor.fetchall():
            count, guessed = finished_count(int(counted), span_us, cap=cap)
            finished[int(minutes_ago)][status] = count
            if guessed:
                estimated.add(int(minutes_ago))
        cursor.execute(*lateness_statement(minutes).bind({"sample": sample}))
        for minutes_ago, late_ms in cursor.fetchall():
            late[int(minutes_ago)].append(int(late_ms))
    result = []
    for minutes_ago in reversed(range(minutes)):
        counts = finished.get(minutes_ago, {})
        samples = sorted(late.get(minutes_ago, []))
        result.append(
            Minute(
                minutes_ago=minutes_ago,
                succeeded=counts.get("succeeded", 0),
                dead=counts.get("dead", 0),
                estimated=minutes_ago in estimated,
                late_p50_ms=int(statistics.median_low(samples)) if samples else None,
                late_p95_ms=_percentile(samples, 0.95) if samples else None,
                late_max_ms=samples[-1] if samples else None,
                sampled=len(samples),
            )
        )
    return result


def dead_by_tenant_hour(
    *, hours: int = DEAD_HOURS, scan_rows: int = DEAD_SCAN_ROWS, tenants: int = DEAD_TENANTS_SHOWN
) -> tuple[list[TenantDeadSeries], int]:
    """The tenants with most dead jobs in the last `hours`, each with its per-hour series."""
    per_tenant: dict[str, list[int]] = defaultdict(lambda: [0] * hours)
    scanned = 0
    with connection.cursor() as cursor:
        params = {"hours": hours, "scan_rows": scan_rows}
        cursor.execute(*STATEMENTS["dashboard_dead_by_tenant_hour"].bind(params))
        for tenant_id, hours_ago, dead, scanned_rows in cursor.fetchall():
            scanned = int(scanned_rows)
            hours_ago = min(int(hours_ago), hours - 1)
            per_tenant[tenant_id][hours - 1 - hours_ago] += int(dead)
    series = [
        TenantDeadSeries(tenant_id=tenant_id, total=sum(values), per_hour=values)
        for tenant_id, values in per_tenant.items()
    ]
    series.sort(key=lambda item: (-item.total, item.tenant_id))
    return series[:tenants], scanned


@lru_cache(maxsize=8)
def tenant_pending_statement(tenants: int) -> Statement:
    branch = _template_branch("dashboard_tenant_pending")
    text = "\nUNION ALL\n".join(f"({branch.replace('{n}', str(n))})" for n in range(tenants))
    return Statement.compile(f"dashboard_tenant_pending_x{tenants}", text)


def paused_tenants(*, tenants: int = PAUSED_TENANTS_SHOWN, cap: int = COUNT_CAP) -> tuple[list[PausedTenant], int]:
    """The paused tenants, longest paused first, each with its held pending jobs; and how many are paused."""
    with connection.cursor() as cursor:
        cursor.execute(*STATEMENTS["dashboard_paused_tenants"].bind({"tenants": tenants, "cap": cap}))
        rows = cursor.fetchall()
        if not rows:
            return [], 0
        params: dict[str, object] = {"cap": cap}
        params.update({f"tenant_{n}": row[0] for n, row in enumerate(rows)})
        cursor.execute(*tenant_pending_statement(len(rows)).bind(params))
        pending = {tenant: int(count) for tenant, count in cursor.fetchall()}
    found = [
        PausedTenant(tenant_id=tenant, paused_at=at, paused_by=by, reason=reason, pending=pending.get(tenant, 0))
        for tenant, at, by, reason, _ in rows
    ]
    return found, int(rows[0][4])


def read_dashboard() -> Dashboard:
    """Every figure of the page, each read once."""
    workers, leases_scanned = leases_by_worker()
    dead_tenants, dead_scanned = dead_by_tenant_hour()
    paused, paused_count = paused_tenants()
    return Dashboard(
        counts=status_counts(),
        count_cap=COUNT_CAP,
        backlog=due_backlog(),
        workers=workers,
        leases_scanned=leases_scanned,
        minutes=recent_minutes(),
        dead_tenants=dead_tenants,
        dead_scanned=dead_scanned,
        dead_scan_rows=DEAD_SCAN_ROWS,
        paused_tenants=paused,
        paused_count=paused_count,
    )
