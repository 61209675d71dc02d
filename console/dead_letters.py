"""The support console's rules, kept out of the admin classes so they test alone.

- paced, bounded bulk retries through `jobs.services.jobs_retry_paced` (the
  queue's guarded UPDATE, with staggered due times; nothing here re-implements it);
- the DLQ summary (one bounded query, `jobs.queue.dead_jobs_by_tenant`).

Masking credentials is `domain.masking`; the capped paginator is
`console.admin_base`, shared with the task admin.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from jobs import queue, services
from jobs.models import DeadJob

logger = logging.getLogger(__name__)


@dataclass
class RetryTally:
    """What a bulk retry did, per outcome of `job_retry`."""

    requeued: list[uuid.UUID] = field(default_factory=list)
    gone: int = 0
    not_dead: int = 0
    task_stopped: int = 0  # dead, but the task is paused or deleted: not requeued
    left_over: bool = False  # more jobs matched than the per-request limit allowed

    @property
    def attempted(self) -> int:
        return len(self.requeued) + self.gone + self.not_dead + self.task_stopped

    def summary(self) -> str:
        text = (
            f"Requeued {len(self.requeued)}; already gone {self.gone}; "
            f"no longer dead {self.not_dead}"
            + (f"; task paused or deleted {self.task_stopped}" if self.task_stopped else "")
            + f" (of {self.attempted} tried)."
        )
        if self.left_over:
            text += " More jobs match than one request may retry (ADMIN_BULK_RETRY_LIMIT): run it again for the rest."
        return text


def retry_paced(job_ids: Iterable[uuid.UUID], *, per_second: float, limit: int, tally: RetryTally) -> None:
    """Retry up to `limit` dead jobs in one paced batch (`jobs.services.jobs_retry_paced`), counting into `tally`.

    The pace is in the jobs' due times, not in sleeps: 500 jobs at 10/s return at once
    and are called over 50 s. `tally` is the caller's, to audit the requeued jobs.
    """
    chosen = list(itertools.islice(job_ids, limit + 1))
    if len(chosen) > limit:
        tally.left_over = True
        chosen = chosen[:limit]
    for job_id, outcome in services.jobs_retry_paced(job_ids=chosen, per_second=per_second).items():
        if outcome is services.RetryOutcome.REQUEUED:
            tally.requeued.append(job_id)
        elif outcome is services.RetryOutcome.GONE:
            tally.gone += 1
        elif outcome in (services.RetryOutcome.TASK_PAUSED, services.RetryOutcome.TASK_DELETED):
            tally.task_stopped += 1
        else:
            tally.not_dead += 1
    logger.info(
        "bulk retry",
        extra={
            "event": "admin_bulk_retry",
            "requeued": len(tally.requeued),
            "gone": tally.gone,
            "not_dead": tally.not_dead,
            "task_stopped": tally.task_stopped,
            "left_over": tally.left_over,
            "per_second": per_second,
        },
    )


SUMMARY_SCAN_ROWS = 10_000
SUMMARY_TENANTS = 20


@dataclass(frozen=True)
class DeadSummary:
    tenants: list[queue.TenantDead]
    scanned: int  # rows read: N + 1 when capped
    capped: bool  # counts are lower bounds over the newest SUMMARY_SCAN_ROWS dead jobs


def dead_summary(*, scan_rows: int | None = None, tenants: int | None = None) -> DeadSummary:
    """Dead jobs per tenant in one bounded query (dead_by_tenant, jobs/sql/figures.sql)."""
    scan_rows = scan_rows or SUMMARY_SCAN_ROWS
    tenants = tenants or SUMMARY_TENANTS
    counts = queue.dead_jobs_by_tenant(scan_rows=scan_rows + 1, tenants=tenants)
    return DeadSummary(tenants=counts.tenants, scanned=counts.scanned, capped=counts.scanned > scan_rows)


def dead_summary_for(request) -> DeadSummary:
    """The summary, read once per request: the dead-job list's tenant filter and its summary box share it."""
    summary = getattr(request, "_dead_summary", None)
    if summary is None:
        summary = request._dead_summary = dead_summary()
    return summary


def oldest_dead_job():
    """The dead job that died first (one row along jobs_archiver_idx), or None."""
    return (
        DeadJob.objects.filter(finished_at__isnull=False)
        .order_by("finished_at")
        .only("id", "tenant_id", "finished_at")
        .first()
    )


@dataclass
class ChangeTally:
    """What a bulk cancel or discard did, per outcome of the guarded service."""

    done: list[uuid.UUID] = field(default_factory=list)
    gone: int = 0
    wrong_status: int = 0
    left_over: bool = False  # more jobs matched than the per-request limit allowed

    def summary(self, *, verb: str, state: str) -> str:
        tried = len(self.done) + self.gone + self.wrong_status
        text = (
            f"{verb} {len(self.done)}; already gone {self.gone}; "
            f"no longer {state} {self.wrong_status} (of {tried} tried)."
        )
        if self.left_over:
            text += " More jobs match than one request may change (ADMIN_BULK_RETRY_LIMIT): run it again for the rest."
        return text


def change_each(
    job_ids: Iterable[uuid.UUID],
    *,
    change: Callable[..., services.ChangeOutcome],
    limit: int,
    tally: ChangeTally,
) -> None:
    """Cancel or discard up to `limit` jobs one by one through the guarded service (`change`).

    Each change commits on its own, like the bulk retry; unpaced, since neither
    calls a tenant's endpoint.
    """
    for index, job_id in enumerate(job_ids):
        if index >= limit:
            tally.left_over = True
            break
        outcome = change(job_id=job_id, tenant_id=None)
        if outcome is services.ChangeOutcome.DONE:
            tally.done.append(job_id)
        elif outcome is services.ChangeOutcome.GONE:
            tally.gone += 1
        else:
            tally.wrong_status += 1
