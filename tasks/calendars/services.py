"""Calendar use cases: put (create or replace), delete, and the rows tying a task to its calendars.

Every statement on calendars, calendar_spans and task_calendars runs from here.
A calendar row is the lock that orders a delete against a task naming the
calendar: both lock it first (a delete then counts the tasks excluding it, a task
write checks it still exists), so a calendar is never deleted under a task that
excludes it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from zoneinfo import ZoneInfo

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from tasks.calendars import rules
from tasks.calendars.models import Calendar, CalendarSpan, TaskCalendar

logger = logging.getLogger(__name__)


class CalendarNotFound(Exception):
    """The tenant has no calendar of that name; `index` is its place in the list that named it."""

    def __init__(self, name: str, index: int = 0) -> None:
        super().__init__(name)
        self.name = name
        self.index = index


class CalendarInUse(Exception):
    """Tasks still exclude the calendar (HTTP 409 naming their count)."""

    def __init__(self, name: str, tasks: int) -> None:
        super().__init__(f"calendar {name} is excluded by {tasks} tasks")
        self.tasks = tasks


class TooManyCalendars(Exception):
    """The tenant already holds MAX_CALENDARS_PER_TENANT calendars."""


class VersionMismatch(Exception):
    """If-Match named another version (HTTP 412); `current_version` is None when the calendar does not exist."""

    def __init__(self, current_version: int | None) -> None:
        super().__init__(f"calendar is at version {current_version}")
        self.current_version = current_version


@dataclass(frozen=True)
class CalendarSpec:
    """A validated calendar body (tasks.calendars.rules)."""

    timezone: str
    dates: tuple[date, ...]
    ranges: tuple[rules.DateRange, ...]

    def as_fields(self) -> dict[str, object]:
        return {
            "timezone": self.timezone,
            "dates": [day.isoformat() for day in sorted(set(self.dates))],
            "ranges": [{"from": r.start.isoformat(), "to": r.end.isoformat()} for r in self.ranges],
        }


def calendar_put(
    *, tenant_id: str, name: str, spec: CalendarSpec, expected_versions: Sequence[int] | None = None
) -> tuple[Calendar, bool]:
    """Create or replace the calendar; return (calendar, created). Its spans are rewritten in the same transaction.

    A replace that changes nothing keeps the version (a client's cached ETag stays valid).
    The scheduler reads the spans at each tick: the edit applies to runs not created yet.
    """
    fields = spec.as_fields()
    for _ in range(2):
        try:
            with transaction.atomic():
                current = Calendar.objects.select_for_update().filter(tenant_id=tenant_id, name=name).first()
                if expected_versions is not None and (current is None or current.version not in expected_versions):
                    raise VersionMismatch(None if current is None else current.version)
                if current is None:
                    # Counted before the insert: two racing creates may pass the cap by one (a quota, not a fence).
                    if Calendar.objects.filter(tenant_id=tenant_id).count() >= rules.MAX_CALENDARS_PER_TENANT:
                        raise TooManyCalendars(tenant_id)
                    calendar = Calendar.objects.create(tenant_id=tenant_id, name=name, **fields)
                    _write_spans(calendar, spec)
                    created = True
                elif all(getattr(current, key) == value for key, value in fields.items()):
                    return current, False
                else:
                    Calendar.objects.filter(pk=current.pk).update(
                        **fields, version=F("version") + 1, updated_at=timezone.now()
                    )
                    calendar = Calendar.objects.get(pk=current.pk)
                    _write_spans(calendar, spec)
                    created = False
        except IntegrityError:
            continue  # a concurrent PUT of the same name inserted first (UNIQUE): replace it instead
        logger.info(
            "calendar saved",
            extra={
                "event": "calendar_created" if created else "calendar_replaced",
                "tenant_id": tenant_id,
                "calendar": name,
            },
        )
        return calendar, created
    raise IntegrityError(f"calendar {name}: lost the create race twice")


def _write_spans(calendar: Calendar, spec: CalendarSpec) -> None:
    CalendarSpan.objects.filter(calendar=calendar).delete()
    zone = ZoneInfo(spec.timezone)
    CalendarSpan.objects.bulk_create(
        CalendarSpan(calendar=calendar, tenant_id=calendar.tenant_id, starts_at=start, ends_at=end)
        for start, end in rules.spans(zone, spec.dates, spec.ranges)
    )


def calendar_delete(*, tenant_id: str, name: str, expected_versions: Sequence[int] | None = None) -> None:
    """Delete the calendar and its spans; refused (CalendarInUse) while a live task excludes it."""
    with transaction.atomic():
        current = Calendar.objects.select_for_update().filter(tenant_id=tenant_id, name=name).first()
        if current is None:
            raise CalendarNotFound(name)
        if expected_versions is not None and current.version not in expected_versions:
            raise VersionMismatch(current.version)
        # Under the calendar's lock: a task write naming it waits for this delete, then finds it gone.
        in_use = TaskCalendar.objects.filter(tenant_id=tenant_id, calendar_name=name).count()
        if in_use:
            raise CalendarInUse(name, in_use)
        CalendarSpan.objects.filter(calendar=current).delete()
        current.delete()
    logger.info("calendar deleted", extra={"event": "calendar_deleted", "tenant_id": tenant_id, "calendar": name})


def task_calendars_set(*, tenant_id: str, task_id: uuid.UUID, names: Sequence[str]) -> None:
    """Make task_calendars say the task excludes `names`, in order; inside the task's write transaction.

    Locks the named calendars first (name order, so two writers never deadlock): a delete
    of one of them either committed before (CalendarNotFound) or waits and then sees this task.
    """
    with transaction.atomic():  # the caller's transaction (a savepoint in it), or its own when called alone
        if names:
            locked = set(
                Calendar.objects.select_for_update()
                .filter(tenant_id=tenant_id, name__in=sorted(names))
                .order_by("name")
                .values_list("name", flat=True)
            )
            for index, name in enumerate(names):
                if name not in locked:
                    raise CalendarNotFound(name, index)
        TaskCalendar.objects.filter(task_id=task_id).delete()
        TaskCalendar.objects.bulk_create(
            TaskCalendar(task_id=task_id, tenant_id=tenant_id, calendar_name=name, position=index)
            for index, name in enumerate(names)
        )


def task_calendars_clear(*, task_id: uuid.UUID) -> None:
    """Forget a deleted task's calendars: it no longer holds them in use."""
    TaskCalendar.objects.filter(task_id=task_id).delete()
