"""Reads of jobs for the tenant API: one job, a task's merged history, the DLQ.

A job lives in MySQL (the queue) until the archiver moves it to the history
store; for a moment after a crash it can be in both, and then MySQL's copy
wins. Every read is scoped to one tenant: another tenant's job is not found.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.db import connections
from django.db.models import Q, QuerySet

from domain.records import RECORD_FIELDS, JobRecord, Position
from history.base import HistoryStore
from jobs.models import Job, JobStatus

# Threads that read the history store while the request thread reads MySQL.
_STORE_READERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="history-read")


@dataclass(frozen=True, slots=True)
class JobView(JobRecord):
    """A job as the API shows it: its record, and which store it was read from."""

    archived: bool = False

    @classmethod
    def of_job(cls, job: Job) -> JobView:
        # next_attempt_at means something only while the job is queued.
        queued = job.status in (JobStatus.PENDING, JobStatus.RUNNING)
        shown = {name: getattr(job, name) for name in RECORD_FIELDS}
        return cls(**{**shown, "next_attempt_at": job.next_attempt_at if queued else None}, archived=False)

    @classmethod
    def of_record(cls, record: JobRecord) -> JobView:
        shown = {name: getattr(record, name) for name in RECORD_FIELDS}
        return cls(**{**shown, "next_attempt_at": None}, archived=True)


# --- history cursors: opaque to clients, exact for us ---


def encode_cursor(position: Position) -> str:
    micros = (position.scheduled_at - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    raw = f"{micros}.{position.job_id.hex}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str) -> Position | None:
    """The position a cursor names, or None when it is not one of ours."""
    if not text or len(text) > 128:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
        micros_text, _, hex_id = raw.partition(".")
        micros = int(micros_text)
        job_id = uuid.UUID(hex=hex_id)
        scheduled_at = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError):
        return None
    if len(hex_id) != 32 or micros < 0:
        return None
    return Position(scheduled_at, job_id)


# --- reads ---


def _shown_jobs() -> QuerySet[Job]:
    """Jobs without the request snapshot's headers and body (up to ~80 KB a row), which JobView never shows."""
    return Job.objects.defer("request_headers", "request_body")


def queued_job(*, tenant_id: str, job_id: uuid.UUID) -> JobView | None:
    """The tenant's job if it is still in MySQL."""
    job = _shown_jobs().filter(id=job_id, tenant_id=tenant_id).first()
    return None if job is None else JobView.of_job(job)


def job_get(*, tenant_id: str, job_id: uuid.UUID, store: HistoryStore) -> JobView | None:
    """The tenant's job: MySQL first (it wins over a history copy), then the history store."""
    job = queued_job(tenant_id=tenant_id, job_id=job_id)
    if job is not None:
        return job
    # Not in the queue: archived, or never existed. The archiver writes the history before it deletes
    # from MySQL, so a job our read missed is already in the store. A store error propagates: "not
    # found" would be a guess.
    record = store.get(tenant_id, job_id)
    return None if record is None else JobView.of_record(record)


def live_history(*, tenant_id: str, task_id: uuid.UUID, before: Position | None, limit: int) -> list[Job]:
    """The task's jobs still in MySQL, strictly older than `before`, by (scheduled_at, id) DESC."""
    query = _shown_jobs().filter(tenant_id=tenant_id, task_id=task_id)
    if before is not None:
        at, job_id = before
        query = query.filter(Q(scheduled_at__lt=at) | Q(scheduled_at=at, id__lt=job_id))
    # UNIQUE (task_id, scheduled_at) makes scheduled_at alone a total order here, equal to
    # (scheduled_at, id) DESC, and lets the unique index serve it without a filesort.
    return list(query.order_by("-scheduled_at")[:limit])


def _read_store(store: HistoryStore, tenant_id: str, task_id: uuid.UUID, before: Position | None, limit: int):
    try:
        return store.page(tenant_id, task_id, before, limit)
    finally:
        # Django opens one connection per thread: a pool thread must not keep one (SQL store).
        connections.close_all()


def merge_newest_first(live: list[JobView], archived: list[JobView]) -> list[JobView]:
    """Two pointers over two (scheduled_at, id) DESC lists; on equal keys (one job in both) MySQL's copy wins."""
    merged: list[JobView] = []
    i = j = 0
    while i < len(live) and j < len(archived):
        a, b = live[i].position, archived[j].position
        if a == b:
            merged.append(live[i])  # the archiver crashed between its writes: drop the history copy
            i += 1
            j += 1
        elif a > b:
            merged.append(live[i])
            i += 1
        else:
            merged.append(archived[j])
            j += 1
    merged.extend(live[i:])
    merged.extend(archived[j:])
    return merged


def task_history(
    *,
    tenant_id: str,
    task_id: uuid.UUID,
    before: Position | None,
    limit: int,
    store: HistoryStore,
    status: str | None = None,
) -> tuple[list[JobView], Position | None]:
    """A page of the task's jobs from both stores, newest first, and the position to resume after.

    Both stores are read in parallel, `limit + 1` each: the first `limit` of the
    merge are then exactly the newest `limit`, and a `limit + 1`-th says there is
    more. If the store raises, so does this: a page without it would look complete.
    Race (the price of reading in parallel): a job archived wholly between the two
    reads (history written after the store read began, MySQL row deleted before
    the MySQL read began) is missing from that page, so a client walking the pages
    skips it; it is never duplicated, and a fresh read shows it. Reading MySQL
    first, then the store, would close it at the cost of one MySQL round trip.

    With `status`, only that status's jobs (e.g. `skipped`): see _task_history_of_status.
    """
    if status is not None:
        return _task_history_of_status(
            tenant_id=tenant_id, task_id=task_id, before=before, limit=limit, store=store, status=status
        )
    pending = _STORE_READERS.submit(_read_store, store, tenant_id, task_id, before, limit + 1)
    try:
        live = [
            JobView.of_job(job)
            for job in live_history(tenant_id=tenant_id, task_id=task_id, before=before, limit=limit + 1)
        ]
    finally:
        # Even when the MySQL read failed: never leave the store read running past the request.
        records = pending.result()  # re-raises the store's error
    archived = [JobView.of_record(record) for record in records]
    merged = merge_newest_first(live, archived)
    page = merged[:limit]
    return page, (page[-1].position if len(merged) > limit else None)


# A status-filtered history page reads the history this many jobs at a time, at most this many in
# all: a page may hold fewer than `limit` jobs while a cursor says more may follow (both stores are
# read as for any page, so the SQL and Cassandra stores filter alike, with no index of their own).
STATUS_SCAN_PAGE = 200
STATUS_SCAN_MAX = 2000


def _task_history_of_status(
    *, tenant_id: str, task_id: uuid.UUID, before: Position | None, limit: int, store: HistoryStore, status: str
) -> tuple[list[JobView], Position | None]:
    """Up to `limit` of the task's jobs in `status`, newest first, and the position to resume after."""
    found: list[JobView] = []
    position, scanned = before, 0
    while True:
        page, next_position = task_history(
            tenant_id=tenant_id, task_id=task_id, before=position, limit=STATUS_SCAN_PAGE, store=store
        )
        scanned += len(page)
        for job in page:
            if job.status == status:
                found.append(job)
                if len(found) == limit:
                    return found, job.position
        if next_position is None:
            return found, None
        position = next_position
        if scanned >= STATUS_SCAN_MAX:
            return found, position


def dlq_page(
    *, tenant_id: str, task_id: uuid.UUID | None, before: uuid.UUID | None, limit: int
) -> tuple[list[JobView], uuid.UUID | None]:
    """The tenant's dead jobs (optionally of one task), newest job first, via jobs_dlq_idx (tenant_id, status)."""
    query = _shown_jobs().filter(tenant_id=tenant_id, status=JobStatus.DEAD)
    if task_id is not None:
        query = query.filter(task_id=task_id)
    if before is not None:
        query = query.filter(id__lt=before)
    rows = list(query.order_by("-id")[: limit + 1])
    page = [JobView.of_job(job) for job in rows[:limit]]
    return page, (rows[limit - 1].id if len(rows) > limit else None)
