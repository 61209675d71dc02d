"""The task's JSON: input validation (every number and string bounded) and output shape.

Shape (DESIGN.md, "A task in JSON"): {"id", "name", "status", "version",
"schedule": {"cron", "timezone"} | {"every", "anchor", "timezone"} | {"run_at"}
plus {"window_seconds", "starts_at", "ends_at", "max_runs"}, "http": {"url", "method",
"headers", "body"}, "timeout_seconds", "max_attempts", "backoff_base_seconds",
"priority", "secret_ref", "overlap", "delete_after_completion", "labels", "runs_scheduled",
"next_run_at", "created_at", "updated_at"}.
Errors name the field as "schedule.cron", "http.url", "http.headers".
"""

from __future__ import annotations

import contextlib
import dataclasses
import unicodedata
from datetime import datetime, timedelta
from typing import Any

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from api.json_fields import JsonBooleanField, JsonIntegerField, JsonStringField
from api.problems import Problem
from api.strict_serializer import StrictSerializer
from domain.secret_refs import MAX_SECRET_REF_LENGTH, SecretRefError, validate_secret_ref
from outbound import egress
from outbound.headers import HeaderError, validate_headers
from tasks import run_health, schedule, services
from tasks.calendars import task_fields as calendar_fields
from tasks.labels import KEY_RULE, MAX_LABELS, VALUE_RULE, LabelError, merge_labels, validate_labels
from tasks.models import HttpMethod, MissedRuns, Overlap, Task
from tasks.priority import DEFAULT_PRIORITY, PRIORITIES
from tasks.request_limits import MAX_BODY_BYTES
from tasks.schedule.bounds import MAX_RUNS_BOUND
from tasks.schedule.every import MAX_EVERY_LENGTH, format_every, parse_every
from tasks.schedule.window import MAX_WINDOW_SECONDS, check_window_fits, shortest_gap
from tasks.services import ScheduleSpec
from tasks.targets import check_task_url
from vault.selectors import secret_exists

# Bounds (documented in docs/reference/tasks-api.md).
MAX_NAME_LENGTH = 200
# The body's, MAX_BODY_BYTES, is in tasks.request_limits: the executor reads it without importing DRF.
TIMEOUT_SECONDS = (1, 900)
MAX_ATTEMPTS = (1, 100)
BACKOFF_BASE_SECONDS = (1, 86400)
PRIORITY = (PRIORITIES[0], PRIORITIES[-1])
# A one-shot may be a minute in the past (client clocks drift) and at most ten years ahead.
RUN_AT_PAST_TOLERANCE = timedelta(seconds=60)
RUN_AT_HORIZON = timedelta(days=3653)
DEFAULT_TIMEZONE = "UTC"

NO_SUCH_SECRET = "no such secret (store it first: PUT /v1/secrets/{name})"
# Keys a client may echo back from a GET; they are read-only and ignored.
READ_ONLY_KEYS = frozenset(
    {
        "id",
        "status",
        "version",
        "next_run_at",
        "created_at",
        "updated_at",
        "paused_reason",
        "consecutive_failures",
        "last_run",
        "runs_scheduled",
    }
)
AUTO_PAUSE_AFTER = (0, 1000)


def _storable_text(value: str) -> str:
    """Refuse lone surrogates: valid JSON escapes, but not storable as utf8mb4 (the driver would 500)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise serializers.ValidationError("must be valid Unicode text") from None
    return value


class StrictDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit offset only: a naive time is ambiguous for a scheduler."""

    default_error_messages = {
        **serializers.DateTimeField.default_error_messages,
        "naive": "needs a UTC offset, e.g. 2027-01-01T09:00:00Z",
    }

    def to_internal_value(self, value: Any) -> datetime:
        parsed = None
        if isinstance(value, str) and len(value) <= 64:
            with contextlib.suppress(ValueError):  # well-formed but impossible, e.g. February 30
                parsed = parse_datetime(value)
        if parsed is None:
            self.fail("invalid", format="YYYY-MM-DDThh:mm:ssZ")
        try:
            return schedule.validate_run_at(parsed)
        except schedule.ScheduleError:  # the schedule owns the rule: a naive time is ambiguous
            self.fail("naive")
        except OverflowError:  # year 9999 with a negative offset is past datetime.max in UTC
            self.fail("invalid", format="YYYY-MM-DDThh:mm:ssZ")


def _minute_floor(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


class ScheduleInput(StrictSerializer):
    cron = JsonStringField(required=False, allow_null=True, max_length=schedule.MAX_CRON_LENGTH, trim_whitespace=False)
    timezone = JsonStringField(required=False, allow_null=True, max_length=schedule.MAX_TIMEZONE_LENGTH)
    run_at = StrictDateTimeField(required=False, allow_null=True)
    exclude_calendars = serializers.JSONField(required=False, allow_null=True, help_text=calendar_fields.HELP)
    every = JsonStringField(
        required=False,
        allow_null=True,
        max_length=MAX_EVERY_LENGTH,
        help_text='an interval instead of a cron: e.g. "90m", "2h", "1h30m" (at least 1m, at most 366d); '
        "runs at anchor + k * every in UTC, whatever the zone's daylight saving",
    )
    anchor = StrictDateTimeField(
        required=False,
        allow_null=True,
        help_text="every's runs are anchor + k * every; default: starts_at, else the creation time (whole minute)",
    )
    window_seconds = JsonIntegerField(
        required=False,
        min_value=0,
        max_value=MAX_WINDOW_SECONDS,
        default=0,
        help_text="each run is called at its nominal time plus an offset in [0, window_seconds), fixed per run; "
        "no longer than the schedule's shortest interval",
    )
    starts_at = StrictDateTimeField(required=False, allow_null=True, help_text="no run before (cron or every)")
    ends_at = StrictDateTimeField(
        required=False, allow_null=True, help_text="no run after; then the task is completed (cron or every)"
    )
    max_runs = JsonIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_RUNS_BOUND,
        help_text="after this many runs the task is completed (cron or every)",
    )

    # Returns a typed ScheduleSpec rather than the attrs dict DRF's stubs expect, so callers
    # get the validated schedule in one value (hence the override).
    def validate(self, attrs: dict[str, Any]) -> ScheduleSpec:  # type: ignore[override]
        cron, zone, run_at = attrs.get("cron"), attrs.get("timezone"), attrs.get("run_at")
        excluded = calendar_fields.exclude_calendars(attrs.get("exclude_calendars"), self.context.get("tenant_id"))
        every, anchor = attrs.get("every"), attrs.get("anchor")
        starts_at, ends_at, max_runs = attrs.get("starts_at"), attrs.get("ends_at"), attrs.get("max_runs")
        window = attrs.get("window_seconds", 0)
        if cron is not None and run_at is not None:
            raise serializers.ValidationError({"run_at": ["give either cron (with timezone) or run_at, not both"]})
        if every is not None and (cron is not None or run_at is not None):
            raise serializers.ValidationError({"every": ["give one of cron, every and run_at"]})
        if cron is None and run_at is None and every is None:
            raise serializers.ValidationError({"cron": ["give a cron (with timezone), an every or a run_at"]})
        if anchor is not None and every is None:
            raise serializers.ValidationError({"anchor": ["only with every"]})
        if run_at is not None:
            for name in ("starts_at", "ends_at", "max_runs"):
                if attrs.get(name) is not None:
                    raise serializers.ValidationError({name: ["only with cron or every (a run_at runs once)"]})
        if starts_at is not None and ends_at is not None and ends_at <= starts_at:
            raise serializers.ValidationError({"ends_at": ["must be after starts_at"]})
        now = services.clock()
        current = self.context.get("current")
        try:
            limits: dict[str, Any] = {
                "window_seconds": window,
                "starts_at": starts_at,
                "ends_at": ends_at,
                "max_runs": max_runs,
                "exclude_calendars": excluded,
            }
            if current is not None and current.run_at is not None and run_at == current.run_at and zone is None:
                return ScheduleSpec(run_at=run_at, **limits)  # unchanged by a PATCH: a past run_at stays valid
            if run_at is not None:
                if zone is not None:
                    raise schedule.ScheduleError("timezone", "a one-shot run_at carries its own offset; omit timezone")
                if run_at < now - RUN_AT_PAST_TOLERANCE:
                    raise schedule.ScheduleError("run_at", "must be in the future")
                if run_at > now + RUN_AT_HORIZON:
                    raise schedule.ScheduleError("run_at", "must be within ten years")
                return ScheduleSpec(run_at=run_at, **limits)
            zone = DEFAULT_TIMEZONE if zone is None else zone
            schedule.parse_timezone(zone)
            if every is not None:
                if anchor is None:
                    anchor = starts_at if starts_at is not None else _minute_floor(now)
                spec = ScheduleSpec(every_seconds=parse_every(str(every)), anchor=anchor, timezone=zone, **limits)
            else:
                spec = ScheduleSpec(cron=schedule.validate_cron(str(cron)), timezone=zone, **limits)
            first = spec.first_run(now)  # a cron with no future run is refused here, not in the service
            unchanged_end = current is not None and ends_at == current.ends_at
            if ends_at is not None and first > ends_at and not unchanged_end:
                raise schedule.ScheduleError("ends_at", "no run of the schedule falls before ends_at")
            if window:
                check_window_fits(window, shortest_gap(first, spec.next_run))
        except schedule.ScheduleError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]}) from None
        return dataclasses.replace(spec, known_first=(now, first))


class HttpInput(StrictSerializer):
    url = JsonStringField(max_length=egress.MAX_URL_LENGTH, trim_whitespace=False)
    method = serializers.ChoiceField(choices=HttpMethod.choices, default=HttpMethod.POST)
    headers = serializers.JSONField(default=dict)
    body = JsonStringField(default="", allow_blank=True, allow_null=True, trim_whitespace=False)

    def validate_url(self, value: str) -> str:
        current = self.context.get("current")
        if current is not None and value == current.http_url:
            return value  # unchanged by a PATCH: not re-resolved on every unrelated edit
        try:
            return check_task_url(value, tenant_id=self.context.get("tenant_id"))
        except egress.TargetError as exc:
            raise serializers.ValidationError(exc.message) from None
        except egress.LookupUnfinished:
            raise url_check_unavailable() from None

    def validate_headers(self, value: Any) -> dict[str, str]:
        try:
            return validate_headers(value)
        except HeaderError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_body(self, value: str | None) -> str:
        value = _storable_text(value or "")
        if len(value.encode("utf-8")) > MAX_BODY_BYTES:
            raise serializers.ValidationError(f"must be at most {MAX_BODY_BYTES} bytes (UTF-8)")
        return value


URL_CHECK_RETRY_SECONDS = 5


def url_check_unavailable() -> Problem:
    """503: the URL's name could not be looked up now; never taken as "does not resolve" (which is accepted)."""
    message = "its host name could not be looked up now (DNS timed out or is busy); try again"
    return Problem(
        503,
        "url-check-unavailable",
        f"http.url: {message}",
        headers={"Retry-After": str(URL_CHECK_RETRY_SECONDS)},
        errors={"http.url": [message]},
    )


def _bounded_int(bounds: tuple[int, int], default: int) -> serializers.IntegerField:
    return JsonIntegerField(min_value=bounds[0], max_value=bounds[1], default=default)


class TaskInput(StrictSerializer):
    """A whole task as sent on create (PATCH merges onto the current task, then validates this)."""

    ignored_keys = READ_ONLY_KEYS

    name = JsonStringField(max_length=MAX_NAME_LENGTH)
    schedule = ScheduleInput()
    http = HttpInput()
    timeout_seconds = _bounded_int(TIMEOUT_SECONDS, 30)
    max_attempts = _bounded_int(MAX_ATTEMPTS, 5)
    backoff_base_seconds = _bounded_int(BACKOFF_BASE_SECONDS, 10)
    priority = _bounded_int(PRIORITY, DEFAULT_PRIORITY)
    secret_ref = JsonStringField(required=False, allow_null=True, max_length=MAX_SECRET_REF_LENGTH)
    missed_runs = serializers.ChoiceField(
        choices=MissedRuns.choices,
        default=MissedRuns.ALL,
        help_text="runs reached late (after an outage): all (replayed, capped), latest, or skip",
    )
    auto_pause_after = JsonIntegerField(
        min_value=AUTO_PAUSE_AFTER[0],
        max_value=AUTO_PAUSE_AFTER[1],
        allow_null=True,
        default=None,
        help_text="pause after this many dead jobs in a row; null: the service default, 0: never",
    )
    overlap = serializers.ChoiceField(
        choices=Overlap.choices,
        default=Overlap.ALLOW,
        help_text="a run while the previous one is unfinished: allow (as today), skip, buffer_one (at most one "
        "waits, called no earlier than the lease end of a call in flight), or replace (waiting or retrying "
        "previous runs are cancelled; a call in flight never is)",
    )
    delete_after_completion = JsonBooleanField(
        default=False, help_text="delete the task (as DELETE does) once it is completed (ends_at or max_runs)"
    )
    labels = serializers.JSONField(
        default=dict,
        help_text=f'up to {MAX_LABELS} labels, e.g. {{"env": "prod"}}: keys {KEY_RULE}; '
        f"values {VALUE_RULE}. A PATCH merges them key by key (null removes a key).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Here, not in validate_labels: the error names the label itself (`labels.env`), not only `labels`.
        try:
            attrs["labels"] = validate_labels(attrs.get("labels", {}))
        except LabelError as exc:
            raise serializers.ValidationError({exc.field: [exc.message]}) from None
        return attrs

    def validate_name(self, value: str) -> str:
        value = _storable_text(value)
        if any(unicodedata.category(char)[0] == "C" or char in "\u2028\u2029" for char in value):
            raise serializers.ValidationError("must not contain control characters")
        return value

    def validate_secret_ref(self, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            validate_secret_ref(value)
        except SecretRefError as exc:
            raise serializers.ValidationError(str(exc)) from None
        current = self.context.get("current")
        if current is not None and value == current.secret_ref:
            return value  # unchanged by a PATCH: a secret deleted since fails at send time, not this edit
        # The tenant's own secrets only; another tenant's and a missing one get the same answer.
        if not secret_exists(tenant_id=self.context["tenant_id"], name=value):
            raise serializers.ValidationError(NO_SUCH_SECRET)
        return value


def model_fields(validated: dict[str, Any]) -> tuple[dict[str, Any], ScheduleSpec]:
    """Split validated input into Task model fields and the schedule."""
    http = validated["http"]
    fields = {
        "name": validated["name"],
        "http_url": http["url"],
        "http_method": http["method"],
        "http_headers": http["headers"],
        "http_body": http["body"],
        "timeout_seconds": validated["timeout_seconds"],
        "max_attempts": validated["max_attempts"],
        "backoff_base_seconds": validated["backoff_base_seconds"],
        "priority": validated["priority"],
        "secret_ref": validated.get("secret_ref"),
        "missed_runs": validated["missed_runs"],
        "auto_pause_after": validated["auto_pause_after"],
        "overlap": validated["overlap"],
        "delete_after_completion": validated["delete_after_completion"],
        "labels": validated["labels"],
        "exclude_calendars": list(validated["schedule"].exclude_calendars) or None,  # NULL: none (tasks.models)
    }
    return fields, validated["schedule"]


def input_of(task: Task) -> dict[str, Any]:
    """The task as create input, so a PATCH can be merged onto it and validated whole."""
    return {
        "name": task.name,
        "schedule": schedule_json(task),
        "http": {
            "url": task.http_url,
            "method": task.http_method,
            "headers": task.http_headers,
            "body": task.http_body,
        },
        "timeout_seconds": task.timeout_seconds,
        "max_attempts": task.max_attempts,
        "backoff_base_seconds": task.backoff_base_seconds,
        "priority": task.priority,
        "secret_ref": task.secret_ref,
        "missed_runs": task.missed_runs,
        "auto_pause_after": task.auto_pause_after,
        "overlap": task.overlap,
        "delete_after_completion": task.delete_after_completion,
        "labels": task.labels,
    }


def merge_patch(current: dict[str, Any], patch: Any) -> Any:
    """Overlay a PATCH body: top-level keys replace, "http" and "labels" merge key by key, "schedule" replaces whole.

    The schedule is one choice (cron + zone, or run_at), so it is never merged.
    """
    if not isinstance(patch, dict):
        return patch  # the serializer reports the wrong type
    merged = {**current, **patch}
    if isinstance(patch.get("http"), dict):
        merged["http"] = {**current["http"], **patch["http"]}
    if "labels" in patch:
        merged["labels"] = merge_labels(current["labels"], patch["labels"])
    return merged


# --- output ----------------------------------------------------------------------


def _iso(value: datetime | None) -> str | None:
    return serializers.DateTimeField().to_representation(value) if value is not None else None


def runs_scheduled_json(task: Task) -> int | None:
    # Counted by the tick only for a task with run limits (jobs/sql/scheduler.sql).
    return task.runs_scheduled if task.max_runs is not None or task.ends_at is not None else None


def paused_reason_json(task: Task) -> str | None:
    return task.paused_reason if task.status == "paused" else None


def schedule_json(task: Task) -> dict[str, Any]:
    """The schedule's kind (cron + timezone, every + anchor + timezone, or run_at), its window and limits when set."""
    if task.run_at is not None:
        kind: dict[str, Any] = {"run_at": _iso(task.run_at)}
    elif task.every_seconds is not None:
        kind = {"every": format_every(task.every_seconds), "anchor": _iso(task.anchor), "timezone": task.timezone}
    else:
        kind = {"cron": task.cron_expression, "timezone": task.timezone}
    # Only what is set, so a schedule without a window, limits or calendars keeps its shape.
    if task.window_seconds:
        kind["window_seconds"] = task.window_seconds
    for name in ("starts_at", "ends_at"):
        if getattr(task, name) is not None:
            kind[name] = _iso(getattr(task, name))
    if task.max_runs is not None:
        kind["max_runs"] = task.max_runs
    if task.exclude_calendars:
        kind["exclude_calendars"] = list(task.exclude_calendars)
    return kind


ScheduleOutput = inline_serializer(
    "TaskSchedule",
    {
        "cron": serializers.CharField(required=False),
        "timezone": serializers.CharField(required=False),
        "run_at": serializers.DateTimeField(required=False),
        "exclude_calendars": serializers.ListField(
            child=serializers.CharField(), required=False, help_text="absent when the task excludes none"
        ),
        "every": serializers.CharField(required=False, help_text='e.g. "1h30m"'),
        "anchor": serializers.DateTimeField(required=False),
        "window_seconds": serializers.IntegerField(required=False, help_text="present when not 0"),
        "starts_at": serializers.DateTimeField(required=False),
        "ends_at": serializers.DateTimeField(required=False),
        "max_runs": serializers.IntegerField(required=False),
    },
)


class HttpOutput(serializers.Serializer):
    url = serializers.CharField(source="http_url")
    method = serializers.ChoiceField(choices=HttpMethod.choices, source="http_method")
    headers = serializers.DictField(child=serializers.CharField(), source="http_headers")
    body = serializers.CharField(source="http_body")


class LastRunOutput(serializers.Serializer):
    """The latest attempt's result, as the executor's result batch wrote it (null before the first)."""

    job_id = serializers.UUIDField(source="last_run_job_id")
    scheduled_at = serializers.DateTimeField(source="last_run_scheduled_at")
    status = serializers.ChoiceField(choices=run_health.LAST_RUN_STATUSES, source="last_run_status")
    http_status = serializers.IntegerField(allow_null=True, source="last_run_http_status")
    at = serializers.DateTimeField(source="last_run_at")

    def get_attribute(self, instance: Task) -> Task | None:
        # Declared with source="*": the task itself, or None (rendered null) before its first run.
        return None if instance.last_run_job_id is None else instance


# The schema of every answer with a task, and the reference tasks/task_json.py renders to.
# No docstring on purpose: drf-spectacular would make it the schema's description.
class TaskOutput(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    status = serializers.CharField()
    version = serializers.IntegerField()
    schedule = serializers.SerializerMethodField()
    http = HttpOutput(source="*")
    timeout_seconds = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    backoff_base_seconds = serializers.IntegerField()
    priority = serializers.IntegerField()
    secret_ref = serializers.CharField(allow_null=True)
    missed_runs = serializers.ChoiceField(choices=MissedRuns.choices)
    auto_pause_after = serializers.IntegerField(allow_null=True)
    overlap = serializers.ChoiceField(choices=Overlap.choices)
    delete_after_completion = serializers.BooleanField()
    runs_scheduled = serializers.SerializerMethodField(
        help_text="runs scheduled toward the schedule's max_runs or ends_at (skipped ones included); "
        "null without either"
    )
    paused_reason = serializers.SerializerMethodField(help_text="why the task is paused; null while active")
    consecutive_failures = serializers.IntegerField(help_text="dead jobs in a row; a success resets it")
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True))
    last_run = LastRunOutput(source="*", allow_null=True)
    next_run_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    @extend_schema_field(ScheduleOutput)
    def get_schedule(self, task: Task) -> dict[str, Any]:
        return schedule_json(task)

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_runs_scheduled(self, task: Task) -> int | None:
        return runs_scheduled_json(task)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_paused_reason(self, task: Task) -> str | None:
        return paused_reason_json(task)


class TaskPage(serializers.Serializer):
    results = TaskOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)
