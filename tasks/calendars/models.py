"""Calendars (tasks.calendars.rules), their UTC spans, and which tasks exclude which calendar.

`calendars` holds what the tenant sent (for GET and the ETag); `calendar_spans`
what the scheduler reads (rewritten with every PUT, in its transaction);
`task_calendars` mirrors each task's `schedule.exclude_calendars`, row by row,
for the scheduler's join and for the "still in use" refusal of a delete. Every
write is in tasks.calendars.services.
"""

from __future__ import annotations

from django.db import models

from domain.ids import BinaryUUIDField
from domain.tenants import ExactCharField, TenantIdField
from tasks.calendars.rules import MAX_NAME_LENGTH


class Calendar(models.Model):
    tenant_id = TenantIdField()
    name = ExactCharField(max_length=MAX_NAME_LENGTH)
    timezone = models.CharField(max_length=64)
    dates = models.JSONField(default=list)  # ["2027-01-01", ...] as sent, sorted
    ranges = models.JSONField(default=list)  # [{"from": "2027-08-01", "to": "2027-08-15"}, ...] as sent
    version = models.PositiveIntegerField(default=1)  # bumped by every PUT that changes it: the ETag
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "calendars"
        constraints = [models.UniqueConstraint(fields=["tenant_id", "name"], name="calendars_tenant_name_uniq")]

    def __str__(self) -> str:
        return f"calendar {self.name} of {self.tenant_id}"


class CalendarSpan(models.Model):
    """One run of consecutive covered dates as a UTC interval [starts_at, ends_at): disjoint per calendar."""

    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="spans", db_constraint=False)
    tenant_id = TenantIdField()  # the calendar's: sharded with it (sharding.vschema), joined on it
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()

    class Meta:
        db_table = "calendar_spans"
        indexes = [
            # The scheduler's probe: the span starting last at or before a run, one index entry read.
            models.Index(fields=["calendar", "starts_at"], name="calendar_spans_probe_idx"),
        ]

    def __str__(self) -> str:
        return f"[{self.starts_at}, {self.ends_at})"


class TaskCalendar(models.Model):
    """One calendar a live task excludes; `position` keeps the task's order (the first match is the reason)."""

    task_id = BinaryUUIDField()
    tenant_id = TenantIdField()
    calendar_name = ExactCharField(max_length=MAX_NAME_LENGTH)
    position = models.PositiveSmallIntegerField()

    class Meta:
        db_table = "task_calendars"
        constraints = [models.UniqueConstraint(fields=["task_id", "calendar_name"], name="task_calendars_uniq")]
        indexes = [
            # A delete's "still excluded by n tasks" count.
            models.Index(fields=["tenant_id", "calendar_name"], name="task_calendars_name_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} excludes {self.calendar_name}"
