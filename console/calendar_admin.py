"""Calendars in the admin: find them by tenant or name, read them, and edit their zone and dates.

An edit goes through the calendar service (tasks.calendars.services.calendar_put), which
rewrites the spans the scheduler reads and bumps the version, after the same validation
as the API (tasks.calendars.serializers.CalendarInput). Calendars are created and deleted
by their tenant through the API only (a delete is refused while a task excludes the calendar).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from tasks.calendars import selectors, services
from tasks.calendars.models import Calendar
from tasks.calendars.serializers import CalendarInput


class CalendarForm(forms.ModelForm):
    dates = forms.JSONField(required=False, help_text='["2027-12-25", ...] local dates YYYY-MM-DD')
    ranges = forms.JSONField(required=False, help_text='[{"from": "2027-08-01", "to": "2027-08-15"}], both included')

    class Meta:
        model = Calendar
        fields = ("timezone", "dates", "ranges")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        data = {
            "timezone": cleaned.get("timezone"),
            "dates": cleaned.get("dates") or [],
            "ranges": cleaned.get("ranges") or [],
        }
        checked = CalendarInput(data=data)
        if not checked.is_valid():
            raise forms.ValidationError(_messages(checked.errors))
        cleaned["spec"] = checked.validated_data
        return cleaned


def _messages(errors: Any, prefix: str = "") -> list[str]:
    if isinstance(errors, dict):
        return [m for key, value in errors.items() for m in _messages(value, f"{prefix}{key}: ")]
    if isinstance(errors, list):
        return [m for value in errors for m in _messages(value, prefix)]
    return [f"{prefix}{errors}"]


@admin.register(Calendar)
class CalendarAdmin(admin.ModelAdmin):
    form = CalendarForm
    list_display = ("name", "tenant_id", "timezone", "entries", "version", "updated_at")
    list_filter = ("timezone",)
    search_fields = ("name", "tenant_id")
    search_help_text = "A calendar name or a tenant id (its beginning)."
    ordering = ("tenant_id", "name")
    readonly_fields = ("tenant_id", "name", "version", "tasks_excluding", "created_at", "updated_at")
    fields = (
        "tenant_id",
        "name",
        "timezone",
        "dates",
        "ranges",
        "version",
        "tasks_excluding",
        "created_at",
        "updated_at",
    )

    def has_add_permission(self, request) -> bool:
        return False  # a tenant's resource: created through the API

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # through the API, which refuses while a task excludes it

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(name__startswith=term) | queryset.filter(tenant_id__startswith=term), False

    @admin.display(description="dates and ranges")
    def entries(self, obj: Calendar) -> str:
        return f"{len(obj.dates)} dates, {len(obj.ranges)} ranges"

    @admin.display(description="tasks excluding it")
    def tasks_excluding(self, obj: Calendar) -> int:
        return selectors.tasks_excluding(tenant_id=obj.tenant_id, name=obj.name)

    def save_model(self, request, obj: Calendar, form: CalendarForm, change: bool) -> None:
        # Through the service: the spans the scheduler reads are rewritten with the dates.
        calendar, _ = services.calendar_put(
            tenant_id=obj.tenant_id, name=obj.name, spec=form.cleaned_data["spec"], expected_versions=[obj.version]
        )
        obj.version, obj.updated_at = calendar.version, calendar.updated_at
