"""The archiver: move finished jobs from the queue (MySQL) to the history store.

Order matters: history first, then the MySQL delete. A crash between the two
leaves the job in both stores, which readers handle (MySQL wins, the copy is
dropped by key), and the next run writes it again (an upsert) and deletes it.
The other order could delete a job that never reached the history.

It also owns the cleanup of what outlives the queue: expired history rows (the SQL
store's purge), run now's expired Idempotency-Keys (`run_requests`), the audit
records of task changes past AUDIT_RETENTION_DAYS (`task_changes`) and tenants'
notification events past the history's TTL, each in one bounded statement per step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from django.conf import settings

from domain.records import JobRecord
from history.base import HistoryStore, HistoryUnavailable, truncate_to_millis
from jobs import queue
from jobs.models import JobStatus
from jobs.queue.notifications import purge_expired_events
from tasks import changes
from workers.metrics import (
    ARCHIVER_FAILURES,
    ARCHIVER_KEPT,
    ARCHIVER_MOVED,
    ARCHIVER_PURGED,
    ARCHIVER_RUN_REQUESTS_PURGED,
    ARCHIVER_TASK_CHANGES_PURGED,
)

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500
DEFAULT_PURGE_LIMIT = 1000


def as_archived(record: JobRecord) -> JobRecord:
    """The record as every history store keeps it: non-key times at Cassandra's precision (milliseconds)."""
    return replace(
        record, started_at=truncate_to_millis(record.started_at), finished_at=truncate_to_millis(record.finished_at)
    )


@dataclass
class ArchiveRun:
    """What one step did."""

    read: int = 0
    deleted: int = 0
    kept: int = 0  # changed since read (a manual retry): left in the queue
    purged: int = 0
    run_requests_purged: int = 0  # expired Idempotency-Keys of runs now
    task_changes_purged: int = 0  # audit records past their retention
    notification_events_purged: int = 0  # tenants' notification events past the history's TTL
    full: bool = False  # some batch was full: more is waiting


class Archiver:
    """One bounded batch per terminal status per step, so a backlog drains over steps, never in one long lock."""

    def __init__(
        self,
        *,
        store: HistoryStore,
        batch_size: int = DEFAULT_BATCH_SIZE,
        purge_limit: int = DEFAULT_PURGE_LIMIT,
        succeeded_after_seconds: int | None = None,
        dead_after_seconds: int | None = None,
        run_request_retention_seconds: int | None = None,
    ) -> None:
        self.store = store
        self.batch_size = batch_size
        self.purge_limit = purge_limit
        self.run_request_retention = run_request_retention_seconds or settings.RUN_REQUEST_RETENTION_SECONDS
        self.ages = {
            JobStatus.SUCCEEDED: succeeded_after_seconds or settings.ARCHIVE_SUCCEEDED_AFTER_SECONDS,
            JobStatus.DEAD: dead_after_seconds or settings.ARCHIVE_DEAD_AFTER_SECONDS,
            # Cancelled jobs (their task paused or deleted) are finished like succeeded ones.
            JobStatus.CANCELLED: succeeded_after_seconds or settings.ARCHIVE_SUCCEEDED_AFTER_SECONDS,
            JobStatus.SKIPPED: succeeded_after_seconds or settings.ARCHIVE_SUCCEEDED_AFTER_SECONDS,
        }

    def step(self) -> bool:
        """One batch per status plus the bounded purges; True when a batch was full."""
        try:
            run = self.archive_once()
        except HistoryUnavailable as exc:
            ARCHIVER_FAILURES.inc()
            # The failed batch was not deleted (history first): its jobs are read again next time.
            logger.warning("history store unavailable", extra={"event": "archive_failed", "error": str(exc)})
            return False
        return run.full

    def archive_once(self) -> ArchiveRun:
        """Purge expired keys, move one batch of each status, purge the history once.

        A store error propagates (its batch stays queued).
        """
        run = ArchiveRun()
        # MySQL alone, first: a history outage (which raises below) does not stop it.
        run.run_requests_purged = queue.purge_expired_run_requests(
            retention_seconds=self.run_request_retention, limit=self.purge_limit
        )
        ARCHIVER_RUN_REQUESTS_PURGED.inc(run.run_requests_purged)
        run.task_changes_purged = changes.purge_expired_changes(
            retention_days=settings.AUDIT_RETENTION_DAYS, limit=self.purge_limit
        )
        ARCHIVER_TASK_CHANGES_PURGED.inc(run.task_changes_purged)
        run.notification_events_purged = purge_expired_events(
            retention_seconds=settings.HISTORY_TTL_SECONDS, limit=self.purge_limit
        )
        for status, age in self.ages.items():
            self._archive_status(status, age, run)
        run.purged = self.store.purge_expired(limit=self.purge_limit)
        ARCHIVER_PURGED.inc(run.purged)
        purged = (run.purged, run.run_requests_purged, run.task_changes_purged, run.notification_events_purged)
        run.full = run.full or max(purged) >= self.purge_limit
        if run.read or any(purged):
            logger.info(
                "archived jobs",
                extra={
                    "event": "archive",
                    "read": run.read,
                    "deleted": run.deleted,
                    "kept": run.kept,
                    "purged": run.purged,
                    "run_requests_purged": run.run_requests_purged,
                    "task_changes_purged": run.task_changes_purged,
                    "notification_events_purged": run.notification_events_purged,
                },
            )
        return run

    def _archive_status(self, status: str, age_seconds: int, run: ArchiveRun) -> None:
        finished = queue.finished_jobs(status=status, age_seconds=age_seconds, limit=self.batch_size)
        if not finished:
            return
        records = [as_archived(job.record) for job in finished]
        # History first: if this raises, nothing is deleted and the next run retries.
        self.store.write_many(records)
        # Guarded by (id, status, fence) as read: a job retried by hand since no longer matches.
        deleted = queue.delete_archived(finished)
        ARCHIVER_MOVED.labels(status).inc(deleted)
        ARCHIVER_KEPT.inc(len(records) - deleted)
        run.read += len(records)
        run.deleted += deleted
        run.kept += len(records) - deleted
        run.full = run.full or len(records) >= self.batch_size
        if deleted < len(records):
            logger.info(
                "jobs changed since read were kept in the queue",
                extra={"event": "archive_kept", "status": status, "kept": len(records) - deleted},
            )
