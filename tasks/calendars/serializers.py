"""A calendar's JSON: `{"timezone", "dates": ["YYYY-MM-DD"], "ranges": [{"from", "to"}]}`, every entry bounded.

Errors name the entry: `dates[3]`, `ranges[1].to`, `timezone`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from api.json_fields import JsonStringField
from api.strict_serializer import StrictSerializer
from tasks.calendars import rules
from tasks.calendars.services import CalendarSpec
from tasks.schedule import MAX_TIMEZONE_LENGTH, ScheduleError, parse_timezone

RANGE_SCHEMA_HELP = "both ends included, YYYY-MM-DD, at most " + str(rules.MAX_RANGE_DAYS) + " days"


class CalendarInput(StrictSerializer):
    ignored_keys = frozenset({"name", "version", "created_at", "updated_at"})  # echoed back from a GET

    timezone = JsonStringField(max_length=MAX_TIMEZONE_LENGTH, help_text="IANA zone the dates are local to")
    dates = serializers.JSONField(
        required=False, help_text=f"{rules.DATE_RULE}; with ranges at most {rules.MAX_ENTRIES}"
    )
    ranges = serializers.JSONField(required=False, help_text=f'[{{"from", "to"}}], {RANGE_SCHEMA_HELP}')

    def validate_timezone(self, value: str) -> str:
        try:
            parse_timezone(value)
        except ScheduleError as exc:
            raise serializers.ValidationError(exc.message) from None
        return value

    # Returns the typed spec, not the attrs dict DRF's stubs expect (as tasks' ScheduleInput does).
    def validate(self, attrs: dict[str, Any]) -> CalendarSpec:  # type: ignore[override]  # a typed spec, see above
        try:
            dates = _dates(attrs.get("dates", []))
            ranges = _ranges(attrs.get("ranges", []))
            rules.check_ranges(ranges)
            rules.check_entry_count(dates, ranges)
        except rules.CalendarRuleError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]}) from None
        return CalendarSpec(timezone=attrs["timezone"], dates=tuple(dates), ranges=tuple(ranges))


def _dates(value: Any) -> list:
    if not isinstance(value, list):
        raise rules.CalendarRuleError("dates", "must be a list of dates YYYY-MM-DD")
    if len(value) > rules.MAX_ENTRIES:
        raise rules.CalendarRuleError("dates", f"a calendar holds at most {rules.MAX_ENTRIES} dates and ranges")
    return [rules.parse_date(item, f"dates[{index}]") for index, item in enumerate(value)]


def _ranges(value: Any) -> list[rules.DateRange]:
    if not isinstance(value, list):
        raise rules.CalendarRuleError("ranges", 'must be a list of {"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"}')
    if len(value) > rules.MAX_ENTRIES:
        raise rules.CalendarRuleError("ranges", f"a calendar holds at most {rules.MAX_ENTRIES} dates and ranges")
    parsed = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise rules.CalendarRuleError(f"ranges[{index}]", 'must be {"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"}')
        unknown = sorted(str(key) for key in item if key not in ("from", "to"))
        if unknown:
            raise rules.CalendarRuleError(f"ranges[{index}].{unknown[0]}", "unknown field")
        for end in ("from", "to"):
            if end not in item:
                raise rules.CalendarRuleError(f"ranges[{index}].{end}", "this field is required")
        parsed.append(
            rules.DateRange(
                start=rules.parse_date(item["from"], f"ranges[{index}].from"),
                end=rules.parse_date(item["to"], f"ranges[{index}].to"),
            )
        )
    return parsed


# "from" is a Python keyword: declared as a mapping.
def _date_ranges():
    return inline_serializer(
        "CalendarDateRange", {"from": serializers.DateField(), "to": serializers.DateField()}, many=True
    )


class CalendarOutput(serializers.Serializer):
    name = serializers.CharField()
    timezone = serializers.CharField()
    dates = serializers.ListField(child=serializers.DateField())
    ranges = _date_ranges()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class CalendarPage(serializers.Serializer):
    results = CalendarOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)
