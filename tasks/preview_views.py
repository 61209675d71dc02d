"""Next-run previews: a saved task's (`GET /v1/tasks/{id}/preview?n=`) and an unsaved schedule's
(`POST /v1/schedules/preview?n=` with a schedule body), in UTC and local time, DST changes marked."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.params import invalid_param
from api.problems import not_found
from domain.ids import parse_id
from tasks import selectors, services
from tasks.calendars.rules import covering as excluded_by
from tasks.calendars.selectors import calendar_spans
from tasks.models import Task, TaskStatus
from tasks.schedule import ScheduleError
from tasks.schedule.missed import WalkLimitReached, planned_runs
from tasks.schedule.preview import MAX_RUNS, PreviewRun, describe_runs, preview_runs, within_limits
from tasks.schedule.window import call_time
from tasks.serializers import ScheduleInput
from tasks.services import ScheduleSpec

DEFAULT_RUNS = 10
# How many next runs a saved task's preview may compute to follow a scheduler that is behind
# (croniter costs 80-200 µs each: at most about a second). A task further behind (e.g. every
# minute, for a week) shows the runs planned within it, `behind` saying why the list is short.
PREVIEW_WALK_MAX = 5000
_DIGITS = re.compile(r"[0-9]{1,3}")
_PROBLEM = OpenApiResponse(description="application/problem+json")
_N = OpenApiParameter(
    "n",
    {"type": "integer", "minimum": 1, "maximum": MAX_RUNS, "default": DEFAULT_RUNS},
    description=f"how many runs, 1-{MAX_RUNS}",
)


_PREVIEW_EXAMPLE = OpenApiExample(
    "across Madrid's spring-forward",
    response_only=True,
    value={
        "timezone": "Europe/Madrid",
        "behind": False,
        "runs": [
            {
                "at": "2027-03-27T01:30:00Z",
                "local": "2027-03-27T02:30:00+01:00",
                "utc_offset": "+01:00",
                "dst": False,
                "offset_changed_from": None,
                "ambiguous_local_time": False,
                "late": False,
                "excluded_by": None,
                "call_at": "2027-03-27T01:30:00Z",
            },
            {
                "at": "2027-03-28T01:00:00Z",
                "local": "2027-03-28T03:00:00+02:00",
                "utc_offset": "+02:00",
                "dst": True,
                "offset_changed_from": "+01:00",
                "ambiguous_local_time": False,
                "late": False,
                "excluded_by": None,
                "call_at": "2027-03-28T01:00:00Z",
            },
        ],
    },
)


class PreviewRunOutput(serializers.Serializer):
    at = serializers.DateTimeField(help_text="UTC")
    local = serializers.SerializerMethodField(help_text="the same instant in the schedule's time zone, with offset")
    utc_offset = serializers.CharField()
    dst = serializers.BooleanField(help_text="the zone is on daylight-saving time")
    offset_changed_from = serializers.CharField(
        allow_null=True, help_text="the previous run's offset when a DST transition lies between"
    )
    ambiguous_local_time = serializers.BooleanField(help_text="the local time occurs twice (fall-back overlap)")
    late = serializers.BooleanField(
        help_text="already past: the scheduler is behind on this task and fires this run as soon as it reaches it"
    )
    call_at = serializers.DateTimeField(
        allow_null=True,
        help_text="when the call is made: `at` (the nominal time, the run's X-Scheduled-At) plus the task's "
        "window offset; null for an unsaved schedule with a window (the offset depends on the task)",
    )

    excluded_by = serializers.SerializerMethodField(
        help_text="the calendar of schedule.exclude_calendars holding this run's date: the scheduler creates it "
        "skipped, uncalled (null: called as usual)"
    )

    def get_local(self, run: PreviewRun) -> str:
        return run.local.isoformat()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_excluded_by(self, run: PreviewRun) -> str | None:
        return excluded_by(self.context.get("calendars", ()), run.at)


class PreviewOutput(serializers.Serializer):
    timezone = serializers.CharField(allow_null=True)
    behind = serializers.BooleanField(
        default=False,
        help_text="the scheduler is behind on this task (its next run is missed): the runs are those its "
        "missed_runs policy fires, late ones marked; the runs it skips are not listed",
    )
    runs = PreviewRunOutput(many=True)


def _count(request: Request) -> int:
    text = request.query_params.get("n", str(DEFAULT_RUNS))
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= MAX_RUNS:
        raise invalid_param("n", f"1 to {MAX_RUNS}")
    return int(text)


def _with_call_times(runs: list[PreviewRun], *, task_id: bytes | None, window_seconds: int) -> list[PreviewRun]:
    """Each run with its call time: nominal plus the window offset the scheduler will use."""
    if not window_seconds:
        return [replace(run, call_at=run.at) for run in runs]
    if task_id is None:
        return runs  # call_at None: the offset is derived from the task's id
    return [replace(run, call_at=call_time(task_id, run.at, window_seconds)) for run in runs]


def _answer(
    spec: ScheduleSpec, *, after: datetime, n: int, task_id: bytes | None = None, calendars: Any = ()
) -> Response:
    try:
        runs = preview_runs(
            cron=spec.cron,
            timezone=spec.timezone,
            run_at=spec.run_at,
            after=after,
            count=n,
            every_seconds=spec.every_seconds,
            anchor=spec.anchor,
            starts_at=spec.starts_at,
            ends_at=spec.ends_at,
            max_runs=spec.max_runs,
        )
    except ScheduleError as exc:  # a saved schedule that no longer has runs (a cron with no future date)
        raise invalid_param(f"schedule.{exc.field}", exc.message) from None
    runs = _with_call_times(runs, task_id=task_id, window_seconds=spec.window_seconds)
    timezone = spec.timezone if spec.run_at is None else None
    body = {"timezone": timezone, "behind": False, "runs": runs}
    return Response(PreviewOutput(body, context={"calendars": calendars}).data)


def _calendars(tenant_id: str, names: Any) -> Any:
    """The excluded calendars' spans, read now (tasks.calendars.selectors), for marking runs."""
    return calendar_spans(tenant_id=tenant_id, names=list(names)) if names else ()


def _planned(task: Task, *, next_run_at: datetime, now: datetime, n: int) -> Response:
    """An active task's next runs as the scheduler will fire them: its missed_runs policy and limits applied."""
    missed_after = timedelta(seconds=settings.SCHEDULER_MISSED_AFTER_SECONDS)
    spec = ScheduleSpec.of(task)

    try:
        runs = planned_runs(
            policy=task.missed_runs,
            next_run_at=next_run_at,
            now=now,
            next_run=spec.next_run,
            missed_after=missed_after,
            replay_max=settings.SCHEDULER_MISSED_RUNS_MAX,
            count=n,
            walk_max=PREVIEW_WALK_MAX,
        )
    except WalkLimitReached as stopped:
        runs = stopped.runs
    except ScheduleError as exc:  # a saved schedule that no longer has runs (a cron with no future date)
        raise invalid_param(f"schedule.{exc.field}", exc.message) from None
    runs_left = None if task.max_runs is None else task.max_runs - task.runs_scheduled
    runs = within_limits(runs, ends_at=task.ends_at, runs_left=runs_left)
    timezone = task.timezone if task.run_at is None else None
    described = describe_runs(runs, timezone=timezone, after=next_run_at - timedelta(microseconds=1), now=now)
    described = _with_call_times(described, task_id=task.id.bytes, window_seconds=task.window_seconds)
    behind = next_run_at < now - missed_after
    calendars = _calendars(task.tenant_id, task.exclude_calendars)
    body = {"timezone": timezone, "behind": behind, "runs": described}
    return Response(PreviewOutput(body, context={"calendars": calendars}).data)


class TaskPreviewView(APIView):
    @extend_schema(
        operation_id="tasks_preview",
        summary="The task's next fire times (UTC and local, DST changes marked)",
        parameters=[_N],
        responses={200: PreviewOutput, 400: _PROBLEM, 404: _PROBLEM},
        examples=[_PREVIEW_EXAMPLE],
        description="An active task's runs from its next_run_at on, as the scheduler will fire them: when it is "
        "behind on the task (`behind`), the task's missed_runs policy applies, so runs it will skip are not listed "
        "and runs it will fire late are marked `late`. A paused task's runs start from now, as a resume would. "
        "A one-shot shows its run_at until it has fired (or been skipped), then no runs.",
    )
    def get(self, request: Request, task_id: str) -> Response:
        n = _count(request)
        task_uuid = parse_id(task_id)
        task = None if task_uuid is None else selectors.task_get(tenant_id=tenant_of(request), task_id=task_uuid)
        if task is None:
            raise not_found("task")
        now = services.clock()
        if task.run_at is not None and task.next_run_at is None:
            # A one-shot that has fired has no run left (the scheduler cleared next_run_at).
            return Response(PreviewOutput({"timezone": None, "behind": False, "runs": []}).data)
        if task.status == TaskStatus.COMPLETED:
            return Response(PreviewOutput({"timezone": task.timezone, "behind": False, "runs": []}).data)
        if task.status == TaskStatus.ACTIVE and task.next_run_at is not None:
            # next_run_at itself is the first run, unless the scheduler is behind and its policy skips it.
            return _planned(task, next_run_at=task.next_run_at, now=now, n=n)
        return _answer(
            ScheduleSpec.of(task),
            after=now,
            n=n,
            task_id=task.id.bytes,
            calendars=_calendars(task.tenant_id, task.exclude_calendars),
        )


class SchedulePreviewView(APIView):
    @extend_schema(
        operation_id="schedules_preview",
        summary="Preview an unsaved schedule's next fire times (UTC and local, DST changes marked)",
        parameters=[_N],
        request=ScheduleInput,
        examples=[
            OpenApiExample(
                "daily 02:30 Madrid", request_only=True, value={"cron": "30 2 * * *", "timezone": "Europe/Madrid"}
            ),
            OpenApiExample(
                "every 90 minutes from an anchor",
                request_only=True,
                value={"every": "90m", "anchor": "2027-03-27T22:00:00Z", "timezone": "Europe/Madrid"},
            ),
            _PREVIEW_EXAMPLE,
        ],
        responses={200: PreviewOutput, 400: _PROBLEM},
        description="The body is a task's `schedule`; errors name its fields as `schedule.cron` etc.",
    )
    def post(self, request: Request) -> Response:
        n = _count(request)
        tenant_id = tenant_of(request)
        serializer = ScheduleInput(data=request.data, context={"tenant_id": tenant_id})
        if not serializer.is_valid():
            raise serializers.ValidationError({"schedule": serializer.errors})
        spec: Any = serializer.validated_data
        return _answer(spec, after=services.clock(), n=n, calendars=_calendars(tenant_id, spec.exclude_calendars))
