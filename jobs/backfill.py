"""Backfill: a task's runs of a past range, created as the scheduler would have created them.

`POST /v1/tasks/{id}/backfill {"from", "to"}` makes one job per run with scheduled_at in
[from, to), at most MAX_RUNS per request: pending with the task's request snapshot, or
skipped when an excluded calendar holds its date (the scheduler's own insert rule,
jobs/sql/calendars.sql). Idempotent: a run already in the queue or in the history is
counted `existing` and not made again (UNIQUE (task_id, scheduled_at) settles a run made
meanwhile by the scheduler or a concurrent backfill). The jobs then go through the normal
queue: due at once, claimed under the executors' fair share and the tenant's running-jobs cap.

A run archived in the window between our history read and our insert would be made again;
the archiver takes finished jobs only ARCHIVE_SUCCEEDED_AFTER_SECONDS (an hour by default) after they end, so that
window (milliseconds) never holds one in practice. Runs older than the history's retention
(HISTORY_TTL_SECONDS) are unknown: `from` may not be older.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from history.base import HistoryStore, Position
from history.stores import get_history_store
from jobs import queue
from jobs.models import JobStatus
from tasks import changes as audit
from tasks import schedule, services
from tasks.models import Task, TaskChangeAction, TaskStatus
from tasks.schedule.every import first_every_run
from tasks.selectors import LIVE_STATUSES

logger = logging.getLogger(__name__)

MAX_RUNS = 1000  # per request
HISTORY_PAGE = 500
OVERLAP_ALLOW = "allow"


class BackfillTaskNotFound(Exception):
    """No live task with this id for this tenant (HTTP 404)."""


class BackfillRefused(Exception):
    """The task cannot be backfilled now (HTTP 409): `reason` is the problem type, `message` says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class BackfillRangeError(ValueError):
    """`field` (from, to) is out of bounds (HTTP 400 naming it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class BackfillResult:
    created: int  # pending jobs made
    existing: int  # runs already made (queued or archived): nothing done
    excluded: int  # made skipped: an excluded calendar holds their date


def runs_for_overlap(*, policy: str, runs: Sequence[datetime]) -> list[tuple[datetime, str | None]]:
    """The runs a backfill makes (oldest first), each with the overlap reason it is made skipped for, or None.

    Made at once, the range's runs would all wait together: `allow` calls every one; `skip` and
    `buffer_one` call the earliest and skip the others (each would find it unfinished, or waiting);
    `replace` calls the latest, the earlier ones replaced by it. Jobs the task has outside the
    range are not looked at (the scheduler's tick decides its own runs against them).
    """
    if policy == OVERLAP_ALLOW or len(runs) < 2:
        return [(run, None) for run in runs]
    if policy == "replace":
        return [(run, "overlap:replaced") for run in runs[:-1]] + [(runs[-1], None)]
    return [(runs[0], None)] + [(run, f"overlap:{policy}") for run in runs[1:]]


def task_backfill(
    *, tenant_id: str, task_id: uuid.UUID, start: datetime, end: datetime, actor: str, now: datetime | None = None
) -> BackfillResult:
    """Create the task's runs with scheduled_at in [start, end) (aware); see the module docstring."""
    now = now or services.clock()
    task = Task.objects.filter(pk=task_id, tenant_id=tenant_id, status__in=LIVE_STATUSES).first()
    if task is None:
        raise BackfillTaskNotFound(str(task_id))
    _check_range(start, end, now)
    _check_task(task)
    runs = _runs(task, start, end)
    # The queue first, then the history: the archiver writes a run there before deleting it here,
    # so a run made before this read is seen by one of the two reads.
    known = queue.backfill_existing_runs(task_id=task_id, start=start, end=end)
    known |= _archived_runs(get_history_store(), tenant_id=tenant_id, task_id=task_id, start=start, end=end)
    missing = runs_for_overlap(policy=task.overlap, runs=[run for run in runs if run not in known])
    with transaction.atomic():
        # The task's lock, as the scheduler's tick and run now take it: a pause or delete committed
        # before is seen here; one after waits and then cancels these jobs with the others.
        locked = Task.objects.select_for_update().filter(pk=task_id, tenant_id=tenant_id).only("status").first()
        if locked is None or locked.status == TaskStatus.DELETED:
            raise BackfillTaskNotFound(str(task_id))
        if locked.status != TaskStatus.ACTIVE:
            raise BackfillRefused("task-paused", "The task is paused: resume it first.")
        made = queue.insert_backfill_jobs(tenant_id=tenant_id, task_id=task_id, runs=missing)
        created, excluded = made.get(JobStatus.PENDING, 0), made.get(JobStatus.SKIPPED, 0)
        if created or excluded:
            # In the transaction that made the runs: the audit trail has a backfill that changed something.
            range_made = {"from": start.isoformat(), "to": end.isoformat(), "created": created, "excluded": excluded}
            audit.record_change(
                task_id=task_id,
                tenant_id=tenant_id,
                action=TaskChangeAction.BACKFILL,
                actor=actor,
                changes=[audit.field_change("backfill", None, range_made)],
            )
    result = BackfillResult(created=created, existing=len(runs) - created - excluded, excluded=excluded)
    logger.info(
        "task backfilled",
        extra={
            "event": "task_backfill",
            "task_id": str(task_id),
            "tenant_id": tenant_id,
            "runs_created": result.created,  # not "created": a LogRecord attribute
            "runs_existing": result.existing,
            "runs_excluded": result.excluded,
        },
    )
    return result


def _check_range(start: datetime, end: datetime, now: datetime) -> None:
    if end <= start:
        raise BackfillRangeError("to", "must be after from")
    if end > now:
        raise BackfillRangeError("to", "must not be in the future (the scheduler makes the runs to come)")
    if start < now - timedelta(seconds=settings.HISTORY_TTL_SECONDS):
        raise BackfillRangeError(
            "from", "must be within the history's retention (HISTORY_TTL_SECONDS): older runs cannot be told apart"
        )


def _check_task(task: Task) -> None:
    if task.status == TaskStatus.PAUSED:
        raise BackfillRefused("task-paused", "The task is paused: resume it first.")
    if task.run_at is not None:
        raise BackfillRefused("not-recurring", "A one-shot task has no runs to backfill.")


def _runs(task: Task, start: datetime, end: datetime) -> list[datetime]:
    """The task's runs in [start, end), at most MAX_RUNS (more is a BackfillRangeError naming `to`)."""
    runs: list[datetime] = []
    prev = start - timedelta(microseconds=1)
    if task.every_seconds is not None and task.anchor is not None:  # an interval counts from its anchor
        first = first_every_run(every_seconds=task.every_seconds, anchor=task.anchor, after=prev)
        prev = first - timedelta(seconds=task.every_seconds)
    while True:
        try:
            run = schedule.next_run_for(
                cron=task.cron_expression, timezone=task.timezone, prev=prev, every_seconds=task.every_seconds
            )
        except schedule.ScheduleError:
            break  # no run after this one
        if run is None or run >= end:
            break
        if len(runs) == MAX_RUNS:
            raise BackfillRangeError("to", f"the range holds more than {MAX_RUNS} runs; backfill it in parts")
        runs.append(run)
        prev = run
    return runs


def _archived_runs(
    store: HistoryStore, *, tenant_id: str, task_id: uuid.UUID, start: datetime, end: datetime
) -> set[datetime]:
    """The task's archived runs with scheduled_at in [start, end), newest first page by page from `end`."""
    found: set[datetime] = set()
    cursor = Position(end, uuid.UUID(int=0))  # strictly older than `end` itself
    while True:
        page = store.page(tenant_id, task_id, cursor, HISTORY_PAGE)
        for record in page:
            if record.scheduled_at < start:
                return found
            found.add(record.scheduled_at)
        if len(page) < HISTORY_PAGE:
            return found
        cursor = page[-1].position
