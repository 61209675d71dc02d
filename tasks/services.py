"""Task use cases: create (idempotent), edit (If-Match), pause, resume, soft delete.

Called by the tenant API and the admin; every function takes the tenant id, so
another tenant's task is simply not found. Every write is one conditional
UPDATE whose WHERE carries what the caller read (version or status): a
concurrent writer makes it match 0 rows instead of being overwritten.
Every write takes the `actor` who makes it and records the change in the audit
trail (tasks.changes) in its own transaction: no change without its record.
"""

from __future__ import annotations

import copy
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from database.inserts import insert_row
from tasks import changes as audit
from tasks import limits, schedule, selectors
from tasks.calendars import services as calendar_services
from tasks.models import Task, TaskChangeAction, TaskLabel, TaskStatus
from tasks.signals import task_stopped

logger = logging.getLogger(__name__)

MYSQL_DUPLICATE_KEY = 1062
IDEMPOTENCY_CONSTRAINT = "tasks_tenant_idem_uniq"
# A concurrent edit between our read and our conditional UPDATE makes us re-read; bounded.
_MAX_RETRIES = 5
PAUSED_BY_TENANT = "paused by the tenant"


def clock() -> datetime:
    """The time use cases compute next runs from; tests replace it (tasks.services.clock)."""
    return timezone.now()


class TaskNotFound(Exception):
    """No live task with this id for this tenant (another tenant's task included)."""


class VersionMismatch(Exception):
    """The task exists but its version is not the one the caller read (HTTP 412)."""

    def __init__(self, current_version: int) -> None:
        super().__init__(f"task is at version {current_version}")
        self.current_version = current_version


class IdempotencyKeyReused(Exception):
    """The Idempotency-Key was first used with another request body (HTTP 422)."""


@dataclass(frozen=True)
class ScheduleSpec:
    """A validated schedule: cron + zone, every + anchor, or a one-shot run_at (UTC); its window and limits."""

    cron: str | None = None
    timezone: str | None = None
    run_at: datetime | None = None
    # Calendars whose dates the runs skip (tasks.calendars): not part of when the task fires, so a change
    # of them alone keeps next_run_at (compare=False) and is written as the task field exclude_calendars.
    exclude_calendars: tuple[str, ...] = field(default=(), compare=False)
    every_seconds: int | None = None
    anchor: datetime | None = None
    window_seconds: int = 0
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    max_runs: int | None = None
    # (since, first): the first run the validation computed from `since`; not part of the schedule.
    known_first: tuple[datetime, datetime] | None = field(default=None, compare=False, repr=False)

    def first_run(self, now: datetime) -> datetime:
        if self.known_first is not None:
            since, first = self.known_first
            if since <= now < first:
                return first  # the first run after any instant from `since` up to it is that one
        return schedule.first_run(
            cron=self.cron,
            timezone=self.timezone,
            run_at=self.run_at,
            now=now,
            every_seconds=self.every_seconds,
            anchor=self.anchor,
            starts_at=self.starts_at,
        )

    def next_run(self, prev: datetime) -> datetime | None:
        return schedule.next_run_for(
            cron=self.cron, timezone=self.timezone, prev=prev, every_seconds=self.every_seconds
        )

    def as_fields(self) -> dict[str, Any]:
        return {
            "cron_expression": self.cron,
            "timezone": self.timezone,
            "run_at": self.run_at,
            "every_seconds": self.every_seconds,
            "anchor": self.anchor,
            "window_seconds": self.window_seconds,
            "starts_at": self.starts_at,
            "ends_at": self.ends_at,
            "max_runs": self.max_runs,
        }

    @classmethod
    def of(cls, task: Task) -> ScheduleSpec:
        return cls(
            cron=task.cron_expression,
            timezone=task.timezone,
            run_at=task.run_at,
            exclude_calendars=tuple(task.exclude_calendars or ()),
            every_seconds=task.every_seconds,
            anchor=task.anchor,
            window_seconds=task.window_seconds,
            starts_at=task.starts_at,
            ends_at=task.ends_at,
            max_runs=task.max_runs,
        )


def _live(tenant_id: str, task_id: uuid.UUID):
    return Task.objects.filter(pk=task_id, tenant_id=tenant_id, status__in=selectors.LIVE_STATUSES)


def _get_live(tenant_id: str, task_id: uuid.UUID) -> Task:
    task = selectors.task_get(tenant_id=tenant_id, task_id=task_id)
    if task is None:
        raise TaskNotFound(str(task_id))
    return task


# --- create --------------------------------------------------------------------


def task_replay(*, tenant_id: str, idempotency_key: str, request_sha256: str) -> Task | None:
    """The task an earlier create with this key made, or None if the key is unbound.

    Called before validation, so a valid first request stays replayable even if
    policy (DNS, allowlist) changed since. Raises IdempotencyKeyReused when the
    key was bound by another body.
    """
    task = selectors.task_by_idempotency_key(tenant_id=tenant_id, key=idempotency_key)
    return None if task is None else _replay(task, request_sha256)


def task_create(
    *,
    tenant_id: str,
    fields: dict[str, Any],
    schedule_spec: ScheduleSpec,
    actor: str,
    idempotency_key: str | None = None,
    request_sha256: str | None = None,
    now: datetime | None = None,
    action: str = TaskChangeAction.CREATE,
) -> tuple[Task, bool]:
    """Create a task; return (task, created). Losing a same-key race returns the winner's task.

    `fields` are validated model fields (name, http_*, limits, secret_ref).
    Callers look for a replay first (task_replay); the key is bound only by a
    successful insert, so a request that failed validation leaves it free.
    Raises limits.ActiveTaskLimitReached when the tenant has its maximum of active tasks.
    `action` is what the audit trail calls it (an import's line records "import").
    """
    now = now or clock()
    task = Task(
        tenant_id=tenant_id,
        **fields,
        **schedule_spec.as_fields(),
        next_run_at=schedule_spec.first_run(now),
        status=TaskStatus.ACTIVE,
        version=1,
        idempotency_key=idempotency_key,
        request_sha256=request_sha256 if idempotency_key is not None else None,
    )
    created = audit.created(task)
    # Rows first, the bound last (_write_within_bound) only where nothing of the task can wait on a
    # lock: no key (another create could be writing the same one) and no calendar (their rows are
    # locked after the tenant's by every other writer).
    rows_first = idempotency_key is None and not task.exclude_calendars and limits.keeps_a_bound()
    try:
        if not (rows_first and _write_within_bound(task, action=action, actor=actor, changes=created, at=now)):
            with transaction.atomic():
                if idempotency_key is None and rows_first:
                    # The bound's UPDATE has just matched nothing: count under the lock.
                    limits.ensure_room_for_active_task(tenant_id)
                elif idempotency_key is None:
                    limits.admit_active_task(tenant_id)
                else:
                    limits.lock_tenants([tenant_id])
                    # A same-key create that won the tenant's lock first is a replay, not a task over the limit.
                    winner = selectors.task_by_idempotency_key(tenant_id=tenant_id, key=idempotency_key)
                    if winner is not None:
                        return _replay(winner, request_sha256), False
                    limits.check_room_for_active_task(tenant_id)  # under the lock taken above
                _write_new_task(task, action=action, actor=actor, changes=created, at=now)
    except IntegrityError as exc:
        # Two requests raced with the same key past task_replay: UNIQUE (tenant_id,
        # idempotency_key) let one insert win; the loser's 1062 arrives only after the
        # winner committed (its INSERT waited on the key lock), so READ COMMITTED sees it.
        if idempotency_key is None or not _is_idempotency_duplicate(exc):
            raise
        winner = Task.objects.get(tenant_id=tenant_id, idempotency_key=idempotency_key)
        logger.info("idempotent create race lost", extra={"event": "task_create_race", "task_id": str(winner.pk)})
        return _replay(winner, request_sha256), False
    logger.info("task created", extra={"event": "task_created", "task_id": str(task.pk), "tenant_id": tenant_id})
    return task, True


class _OutsideBound(Exception):
    """The tenant's bound did not admit the task: what was written for it is rolled back."""


def _write_within_bound(task: Task, *, action: str, actor: str, changes: list[dict[str, Any]], at: datetime) -> bool:
    """Write the task, then admit it by its tenant's bound (limits.admit_within_bound); False: nothing written.

    The rows go first and the bound's UPDATE, which locks the tenant's row until commit, last: the
    rows' INSERTs are held and go with it in one round trip (database/backend/connection.py), and
    the tenant's creates wait on each other only for the COMMIT. Held, they must not wait on a lock
    (see database.inserts.insert_row): a new id, no idempotency key, no calendar. No other writer
    waits on a task row no one else can see while it holds the tenant's lock. When the bound does
    not admit the task (no limits row yet, counted too long ago, at the limit), the caller counts
    under the lock, with nothing of this task in the transaction to count.
    """
    try:
        with transaction.atomic():
            _write_new_task(task, action=action, actor=actor, changes=changes, at=at, held=True)
            if not limits.admit_within_bound(task.tenant_id):
                raise _OutsideBound
    except _OutsideBound:
        return False
    return True


def _write_new_task(
    task: Task, *, action: str, actor: str, changes: list[dict[str, Any]], at: datetime, held: bool = False
) -> None:
    """The task's rows: the task, its labels, its change record, its calendars; `held`: the INSERTs
    of the task and its change record go with the next statement."""
    insert_row(task, deferred=held)
    _write_label_rows(task, new=True)
    audit.record_change(
        task_id=task.pk,
        tenant_id=task.tenant_id,
        action=action,
        actor=actor,
        changes=changes,
        version=task.version,
        at=at,
        deferred=held,
    )
    if task.exclude_calendars:
        calendar_services.task_calendars_set(tenant_id=task.tenant_id, task_id=task.pk, names=task.exclude_calendars)


def _replay(task: Task, request_sha256: str | None) -> Task:
    if task.request_sha256 != request_sha256:
        raise IdempotencyKeyReused(str(task.pk))
    return task


def _is_idempotency_duplicate(exc: IntegrityError) -> bool:
    code = exc.args[0] if exc.args else None
    return code == MYSQL_DUPLICATE_KEY and IDEMPOTENCY_CONSTRAINT in str(exc)


# --- edit ----------------------------------------------------------------------


def task_update(
    *,
    tenant_id: str,
    task_id: uuid.UUID,
    expected_version: int,
    fields: dict[str, Any],
    actor: str,
    schedule_spec: ScheduleSpec | None = None,
    now: datetime | None = None,
    action: str = TaskChangeAction.UPDATE,
) -> Task:
    """Apply a validated edit if the task is still at `expected_version` (the one the edit was built on).

    Only fields that differ are written and an edit that changes nothing keeps
    the version, so clients' cached ETags stay valid. A changed schedule
    recomputes next_run_at as on create; any other edit leaves it to the scheduler.
    """
    now = now or clock()
    current = _get_live(tenant_id, task_id)
    if current.version != expected_version:
        raise VersionMismatch(current.version)
    changes = {name: value for name, value in fields.items() if getattr(current, name) != value}
    if schedule_spec is not None and schedule_spec != ScheduleSpec.of(current):
        changes.update(schedule_spec.as_fields())
        changes["next_run_at"] = schedule_spec.first_run(now)
        if current.max_runs is None and current.ends_at is None:
            # The tick counts runs only while a task has limits: a task gaining them counts from here.
            changes["runs_scheduled"] = 0
    if not changes:
        return current
    # Conditional UPDATE, not read-then-write: of two PATCHes carrying the same
    # version, InnoDB serialises them on the row lock and the second matches 0 rows.
    with transaction.atomic():
        updated = (
            _live(tenant_id, task_id)
            .filter(version=expected_version)
            .update(**changes, version=F("version") + 1, updated_at=now)
        )
        if updated == 0:
            raise _why_not_updated(tenant_id, task_id)
        if "labels" in changes:
            # The task's row lock (taken by the UPDATE) orders two edits' label rows too.
            _write_label_rows(Task(pk=task_id, tenant_id=tenant_id, labels=changes["labels"]))
        # The UPDATE matched the version we read: `current` holds exactly the old values.
        edited = copy.copy(current)
        for name, value in changes.items():
            setattr(edited, name, value)
        audit.record_change(
            task_id=task_id,
            tenant_id=tenant_id,
            action=action,
            actor=actor,
            changes=audit.diff(audit.snapshot(current), audit.snapshot(edited)),
            version=expected_version + 1,
            at=now,
        )
        if "exclude_calendars" in changes:
            calendar_services.task_calendars_set(
                tenant_id=tenant_id, task_id=task_id, names=changes["exclude_calendars"] or []
            )
    logger.info("task updated", extra={"event": "task_updated", "task_id": str(task_id), "fields": sorted(changes)})
    return _get_live(tenant_id, task_id)


def _write_label_rows(task: Task, *, new: bool = False) -> None:
    """Mirror `task.labels` into task_labels (the filtered list's index); inside the task's write transaction.

    A task inserted by this transaction (`new`) has no rows to delete, and without labels none to add.
    """
    if not new:
        TaskLabel.objects.filter(task_id=task.pk).delete()
    if not task.labels:
        return
    TaskLabel.objects.bulk_create(
        TaskLabel(task_id=task.pk, tenant_id=task.tenant_id, key=key, value=value) for key, value in task.labels.items()
    )


def _why_not_updated(tenant_id: str, task_id: uuid.UUID) -> Exception:
    task = _live(tenant_id, task_id).only("version").first()
    return TaskNotFound(str(task_id)) if task is None else VersionMismatch(task.version)


def task_delete(*, tenant_id: str, task_id: uuid.UUID, actor: str, expected_versions: list[int] | None = None) -> None:
    """Soft-delete: the row stays (its jobs and idempotency key refer to it), the API forgets it.

    Its pending jobs are cancelled and its dead ones leave the DLQ (cancelled) in the same
    transaction; a running job finishes and its result lands.
    """
    now = clock()
    query = _live(tenant_id, task_id)
    if expected_versions is not None:
        # Guarded in the UPDATE itself: an edit committed after the client read makes it match 0 rows (412).
        query = query.filter(version__in=expected_versions)
    with transaction.atomic():
        # Locked first, for the audit trail's old status (active or paused); the UPDATE below then
        # keeps its own guards (a version the client read) and matches this row or raises.
        before = query.select_for_update().values_list("status", "version").first()
        if (
            before is None
            or query.update(status=TaskStatus.DELETED, deleted_at=now, updated_at=now, version=F("version") + 1) == 0
        ):
            raise _why_not_updated(tenant_id, task_id)
        audit.record_change(
            task_id=task_id,
            tenant_id=tenant_id,
            action=TaskChangeAction.DELETE,
            actor=actor,
            changes=audit.diff({"status": before[0]}, {"status": TaskStatus.DELETED}),
            version=before[1] + 1,
            at=now,
        )
        # Same transaction: the task's pending and dead jobs leave the queue with it, or neither happens.
        task_stopped.send(sender=Task, tenant_id=tenant_id, task_id=task_id, deleted=True)
        calendar_services.task_calendars_clear(task_id=task_id)  # a deleted task holds no calendar in use
    logger.info("task deleted", extra={"event": "task_deleted", "task_id": str(task_id), "tenant_id": tenant_id})


# --- pause / resume ------------------------------------------------------------


def task_pause(*, tenant_id: str, task_id: uuid.UUID, actor: str, reason: str = PAUSED_BY_TENANT) -> Task:
    """Pause an active task (the scheduler only reads active ones); a paused task is returned as is.

    Its pending jobs (retries included) are cancelled in the same transaction; a running job
    finishes, and a retry it asks for is cancelled by the result write.
    """
    now = clock()
    with transaction.atomic():
        # Guarded on status: a concurrent pause or delete makes this match 0 rows, never bump twice.
        updated = (
            _live(tenant_id, task_id)
            .filter(status=TaskStatus.ACTIVE)
            .update(status=TaskStatus.PAUSED, paused_reason=reason, version=F("version") + 1, updated_at=now)
        )
        # Read in the transaction: the version this pause made, for its record and the answer.
        task = _get_live(tenant_id, task_id)
        if updated:
            # An active task has no paused_reason (a resume clears it).
            audit.record_change(
                task_id=task_id,
                tenant_id=tenant_id,
                action=TaskChangeAction.PAUSE,
                actor=actor,
                changes=audit.diff(
                    {"status": TaskStatus.ACTIVE, "paused_reason": ""},
                    {"status": TaskStatus.PAUSED, "paused_reason": reason},
                ),
                version=task.version,
                at=now,
            )
            # Same transaction: the pending jobs (retries included) leave the queue with the pause.
            task_stopped.send(sender=Task, tenant_id=tenant_id, task_id=task_id, deleted=False)
    if updated:
        logger.info("task paused", extra={"event": "task_paused", "task_id": str(task_id)})
    return task


def task_resume(*, tenant_id: str, task_id: uuid.UUID, actor: str, now: datetime | None = None) -> Task:
    """Resume a paused task at its next future run (runs missed while paused are not replayed).

    A one-shot whose run already happened (next_run_at cleared by the
    scheduler) stays without a next run; an active task is returned as is.
    Raises limits.ActiveTaskLimitReached when the tenant has its maximum of active tasks.
    """
    for _ in range(_MAX_RETRIES):
        task = _get_live(tenant_id, task_id)
        if task.status in (TaskStatus.ACTIVE, TaskStatus.COMPLETED):
            return task  # a completed task has no run left to resume
        current = now or clock()
        # A one-shot keeps run_at, or None once it has fired; a cron moves to its next future run.
        next_run_at = task.next_run_at if task.is_one_shot else ScheduleSpec.of(task).first_run(current)
        with transaction.atomic():
            # Counted under the tenant's lock, committed with the update: two resumes (or a
            # resume and a create) cannot both take the last active slot.
            limits.ensure_room_for_active_task(tenant_id)
            # Guarded on the version we computed from: an edit of the schedule in between
            # must not be resumed with a next_run_at computed from the old one.
            updated = (
                _live(tenant_id, task_id)
                .filter(status=TaskStatus.PAUSED, version=task.version)
                .update(
                    status=TaskStatus.ACTIVE,
                    next_run_at=next_run_at,
                    paused_reason="",
                    consecutive_failures=0,
                    version=F("version") + 1,
                    updated_at=current,
                )
            )
            if updated:
                audit.record_change(
                    task_id=task_id,
                    tenant_id=tenant_id,
                    action=TaskChangeAction.RESUME,
                    actor=actor,
                    changes=audit.diff(
                        {"status": TaskStatus.PAUSED, "paused_reason": task.paused_reason},
                        {"status": TaskStatus.ACTIVE, "paused_reason": ""},
                    ),
                    version=task.version + 1,
                    at=current,
                )
        if updated:
            logger.info("task resumed", extra={"event": "task_resumed", "task_id": str(task_id)})
            return _get_live(tenant_id, task_id)
    raise _why_not_updated(tenant_id, task_id)
