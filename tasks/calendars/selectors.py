"""Reads of calendars, always scoped to one tenant (another tenant's calendar is simply absent)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tasks.calendars.models import Calendar, CalendarSpan, TaskCalendar


def calendar_get(*, tenant_id: str, name: str) -> Calendar | None:
    return Calendar.objects.filter(tenant_id=tenant_id, name=name).first()


def calendar_page(*, tenant_id: str, after: str | None, limit: int) -> tuple[list[Calendar], str | None]:
    """Up to `limit` calendars by name, after the name `after`, and the next cursor (the last name) or None.

    Keyset on calendars_tenant_name_uniq (tenant_id, name): a page costs the same at any depth.
    """
    query = Calendar.objects.filter(tenant_id=tenant_id)
    if after is not None:
        query = query.filter(name__gt=after)
    rows = list(query.order_by("name")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].name
    return rows, None


def calendars_missing(*, tenant_id: str, names: Sequence[str]) -> list[str]:
    """The names among `names` the tenant has no calendar of."""
    found = set(Calendar.objects.filter(tenant_id=tenant_id, name__in=list(names)).values_list("name", flat=True))
    return [name for name in names if name not in found]


def tasks_excluding(*, tenant_id: str, name: str) -> int:
    """How many live tasks exclude the calendar (task_calendars holds live tasks only)."""
    return TaskCalendar.objects.filter(tenant_id=tenant_id, calendar_name=name).count()


def calendar_spans(*, tenant_id: str, names: Sequence[str]) -> list[tuple[str, list[tuple[datetime, datetime]]]]:
    """Each named calendar's UTC spans (aware, sorted), in the order of `names`; a missing name has none.

    What the preview and a backfill test runs against (tasks.calendars.rules.covering), read
    now: the same rows the scheduler's SQL reads at its tick.
    """
    by_name: dict[str, list[tuple[datetime, datetime]]] = {name: [] for name in names}
    rows = (
        CalendarSpan.objects.filter(calendar__tenant_id=tenant_id, calendar__name__in=list(names))
        .order_by("starts_at")
        .values_list("calendar__name", "starts_at", "ends_at")
    )
    for name, starts_at, ends_at in rows:
        by_name[name].append((starts_at, ends_at))
    return [(name, by_name[name]) for name in names]
