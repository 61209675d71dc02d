"""Tenant API for tasks: thin views over tasks.services and tasks.selectors.

The tenant is `tenant_of(request)` (from the verified JWT) and nothing
else. Another tenant's task, a deleted task and a malformed id are all 404,
and 404 is decided before any precondition (428/412).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from django.utils import timezone
from django.utils.http import RFC3986_SUBDELIMS, escape_leading_slashes
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import actor_of, tenant_of
from api.params import CURSOR_PARAMETER, LIMIT_PARAMETER, invalid_param, page_limit, query_id
from api.parsers import BoundedJSONParser, MergePatchJSONParser
from api.problems import Problem, not_found
from api.renderers import RawJSON
from domain.ids import parse_id
from tasks import limits, selectors, services
from tasks.calendars import services as calendar_services
from tasks.labels import LabelError, parse_selector
from tasks.models import Task
from tasks.preconditions import IDEMPOTENCY_KEY_SCHEMA, etag, idempotency_key_problem, parse_if_match, request_sha256
from tasks.serializers import TaskInput, TaskOutput, TaskPage, input_of, merge_patch, model_fields
from tasks.task_json import task_json, task_page_json

_PROBLEM = OpenApiResponse(description="application/problem+json")
_URL_CHECK_UNAVAILABLE = OpenApiResponse(
    description="url-check-unavailable: the URL's host name could not be looked up now (timed out, or too many "
    "lookups in flight); `errors` names `http.url`. Nothing was saved; retry after `Retry-After` seconds."
)
_LABEL_SELECTOR = OpenApiParameter(
    "label",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    many=True,
    explode=True,
    description="only tasks carrying this label, as key=value (e.g. env=prod); repeat it to require several",
)
_STATUS_FILTER = OpenApiParameter(
    "status",
    {"type": "string", "enum": list(selectors.LIVE_STATUSES)},
    OpenApiParameter.QUERY,
    description="only tasks in this status (completed: past the schedule's ends_at or max_runs)",
)
_IF_MATCH = OpenApiParameter(
    "If-Match", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True, description='the ETag read, e.g. "7"'
)
_IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    IDEMPOTENCY_KEY_SCHEMA,
    OpenApiParameter.HEADER,
    description="1-255 visible ASCII characters (inner spaces allowed)",
)


def _not_found() -> Problem:
    return not_found("task")


def _task_id(raw: str) -> uuid.UUID:
    task_id = parse_id(raw)
    if task_id is None:
        raise _not_found()
    return task_id


_CREATE_EXAMPLE = OpenApiExample(
    "weekday report",
    request_only=True,
    value={
        "name": "weekday report",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"},
        "http": {
            "url": "https://example.com/hooks/report",
            "method": "POST",
            "headers": {"Content-Type": "application/json"},
            "body": '{"kind": "daily"}',
        },
        "timeout_seconds": 30,
        "max_attempts": 5,
        "backoff_base_seconds": 10,
        "priority": 5,
    },
)
_INTERVAL_EXAMPLE = OpenApiExample(
    "every 90 minutes, never overlapping",
    request_only=True,
    value={
        "name": "sync inventory",
        "schedule": {"every": "90m", "anchor": "2027-01-01T00:00:00Z", "window_seconds": 300},
        "http": {"url": "https://example.com/hooks/sync"},
        "overlap": "skip",
    },
)
_LIMITED_EXAMPLE = OpenApiExample(
    "a campaign: daily for 30 runs, then deleted",
    request_only=True,
    value={
        "name": "campaign reminder",
        "schedule": {
            "cron": "0 9 * * *",
            "timezone": "Europe/Madrid",
            "starts_at": "2027-05-01T00:00:00Z",
            "ends_at": "2027-07-01T00:00:00Z",
            "max_runs": 30,
            "window_seconds": 600,
        },
        "http": {"url": "https://example.com/hooks/remind"},
        "overlap": "replace",
        "delete_after_completion": True,
    },
)
_PATCH_EXAMPLE = OpenApiExample(
    "move to 08:30", request_only=True, value={"schedule": {"cron": "30 8 * * 1-5", "timezone": "Europe/Madrid"}}
)


def _task_response(task: Task, status_code: int = status.HTTP_200_OK, *, location: str | None = None) -> Response:
    headers = {"ETag": etag(task.version)}
    if location is not None:
        headers["Location"] = location
    return Response(task_json(task), status=status_code, headers=headers)


def _created_location(request: Request, task: Task) -> str:
    """The new task's URL: the collection's path (script prefix included) and its id, quoted as
    reverse("task") writes it, without the resolver's walk."""
    return escape_leading_slashes(quote(f"{request.path}/{task.pk}", safe=RFC3986_SUBDELIMS + "/~:@"))


def _validate(data: Any, *, tenant_id: str, current: Task | None = None) -> dict[str, Any]:
    context: dict[str, Any] = {"tenant_id": tenant_id}
    if current is not None:
        context["current"] = current
    return TaskInput.validated(data, context=context)


def _required_versions(request: Request) -> list[int]:
    if_match = parse_if_match(request.headers.get("If-Match"))
    if if_match.missing:
        raise Problem(428, "precondition-required", 'Send If-Match with the task\'s ETag (e.g. If-Match: "7").')
    return list(if_match.versions)


def _stale(current_version: int) -> Problem:
    return Problem(
        412,
        "precondition-failed",
        "The task changed since you read it; GET it again.",
        current_etag=etag(current_version),
    )


def _active_task_limit(exc: limits.ActiveTaskLimitReached) -> Problem:
    """409 naming the limit: one more active task would exceed the tenant's max_active_tasks."""
    return Problem(
        409,
        "active-task-limit",
        f"This tenant already has {exc.active} active tasks, its limit (max_active_tasks = {exc.limit}); "
        "pause or delete one first.",
        limit="max_active_tasks",
        max_active_tasks=exc.limit,
        active_tasks=exc.active,
    )


def _calendar_gone(exc: calendar_services.CalendarNotFound) -> Problem:
    """A calendar the input named was deleted between validation and the write (the serializer checks first)."""
    return invalid_param(f"schedule.exclude_calendars[{exc.index}]", "no such calendar")


def _key_reused() -> Problem:
    return Problem(
        422,
        "idempotency-key-reused",
        "This Idempotency-Key was used with a different request body.",
        errors={"Idempotency-Key": ["used with a different request body"]},
    )


class TaskListCreateView(APIView):
    @extend_schema(
        operation_id="tasks_list",
        summary="List the tenant's tasks, newest first",
        parameters=[
            CURSOR_PARAMETER,
            LIMIT_PARAMETER,
            _LABEL_SELECTOR,
            _STATUS_FILTER,
        ],
        responses={200: TaskPage, 400: _PROBLEM, 401: _PROBLEM},
    )
    def get(self, request: Request) -> Response:
        limit = page_limit(request)
        before = query_id(request, "cursor", "not a cursor")
        try:
            wanted = parse_selector(request.query_params.getlist("label"))
        except LabelError as exc:
            raise invalid_param(exc.field, exc.message) from None
        task_status = request.query_params.get("status")
        if task_status is not None and task_status not in selectors.LIVE_STATUSES:
            raise invalid_param("status", f"one of {', '.join(selectors.LIVE_STATUSES)}")
        tenant_id = tenant_of(request)
        text = None
        if timezone.get_current_timezone_name() == "UTC":  # the database writes times in UTC only
            text, next_id = selectors.task_page_text(
                tenant_id=tenant_id, before=before, limit=limit, labels=wanted, status=task_status
            )
        results: RawJSON | list[dict[str, Any]]
        if text is not None:
            results = RawJSON(text)
        else:
            tasks, next_id = selectors.task_page(
                tenant_id=tenant_id, before=before, limit=limit, labels=wanted, status=task_status
            )
            results = task_page_json(tasks)
        return Response({"results": results, "next_cursor": str(next_id) if next_id else None})

    @extend_schema(
        operation_id="tasks_create",
        summary="Create a task (idempotent with Idempotency-Key)",
        description="201 with the task, its ETag and Location; the same Idempotency-Key and body again "
        "answers 200 with the same task; that key with another body is a 422.",
        parameters=[_IDEMPOTENCY_KEY],
        request=TaskInput,
        examples=[_CREATE_EXAMPLE, _INTERVAL_EXAMPLE, _LIMITED_EXAMPLE],
        responses={
            200: TaskOutput,
            201: TaskOutput,
            400: _PROBLEM,
            401: _PROBLEM,
            409: _PROBLEM,
            422: _PROBLEM,
            429: _PROBLEM,
            503: _URL_CHECK_UNAVAILABLE,
        },
    )
    def post(self, request: Request) -> Response:
        tenant_id = tenant_of(request)
        key = request.headers.get("Idempotency-Key")
        digest = None
        try:
            if key is not None:
                if why := idempotency_key_problem(key):
                    raise invalid_param("Idempotency-Key", why)
                digest = request_sha256(request.data)
                replayed = services.task_replay(tenant_id=tenant_id, idempotency_key=key, request_sha256=digest)
                if replayed is not None:
                    return _task_response(replayed)
            fields, schedule_spec = model_fields(_validate(request.data, tenant_id=tenant_id))
            task, created = services.task_create(
                tenant_id=tenant_id,
                fields=fields,
                schedule_spec=schedule_spec,
                idempotency_key=key,
                request_sha256=digest,
                actor=actor_of(request),
            )
        except services.IdempotencyKeyReused:
            raise _key_reused() from None
        except limits.ActiveTaskLimitReached as exc:
            raise _active_task_limit(exc) from None
        except calendar_services.CalendarNotFound as exc:
            raise _calendar_gone(exc) from None
        if not created:
            return _task_response(task)
        return _task_response(task, status.HTTP_201_CREATED, location=_created_location(request, task))


class TaskDetailView(APIView):
    # PATCH is a JSON merge patch (RFC 7396), under either media type.
    parser_classes = [BoundedJSONParser, MergePatchJSONParser]

    @extend_schema(operation_id="tasks_get", summary="Get one task", responses={200: TaskOutput, 404: _PROBLEM})
    def get(self, request: Request, task_id: str) -> Response:
        task = selectors.task_get(tenant_id=tenant_of(request), task_id=_task_id(task_id))
        if task is None:
            raise _not_found()
        return _task_response(task)

    @extend_schema(
        operation_id="tasks_update",
        summary="Edit a task (merge patch, If-Match required)",
        parameters=[_IF_MATCH],
        request=TaskInput,
        examples=[_PATCH_EXAMPLE],
        responses={
            200: TaskOutput,
            400: _PROBLEM,
            404: _PROBLEM,
            412: _PROBLEM,
            428: _PROBLEM,
            503: _URL_CHECK_UNAVAILABLE,
        },
        description='Merge-patch: top-level fields replace, "http" merges key by key, "schedule" replaces whole. '
        "A changed schedule recomputes next_run_at; other edits never touch it.",
    )
    def patch(self, request: Request, task_id: str) -> Response:
        tenant_id = tenant_of(request)
        current = selectors.task_get(tenant_id=tenant_id, task_id=_task_id(task_id))
        if current is None:
            raise _not_found()
        versions = _required_versions(request)
        if current.version not in versions:
            raise _stale(current.version)
        fields, schedule_spec = model_fields(
            _validate(merge_patch(input_of(current), request.data), tenant_id=tenant_id, current=current)
        )
        try:
            task = services.task_update(
                tenant_id=tenant_id,
                task_id=current.pk,
                # The version the merge was built on, not any version If-Match listed: an edit
                # committed since makes the conditional UPDATE match 0 rows (412), never a lost update.
                expected_version=current.version,
                fields=fields,
                schedule_spec=schedule_spec,
                actor=actor_of(request),
            )
        except services.TaskNotFound:
            raise _not_found() from None
        except services.VersionMismatch as exc:
            raise _stale(exc.current_version) from None
        except calendar_services.CalendarNotFound as exc:
            raise _calendar_gone(exc) from None
        return _task_response(task)

    @extend_schema(
        operation_id="tasks_delete",
        summary="Delete a task (soft)",
        parameters=[
            OpenApiParameter("If-Match", OpenApiTypes.STR, OpenApiParameter.HEADER, description="optional ETag guard")
        ],
        responses={204: None, 404: _PROBLEM, 412: _PROBLEM},
    )
    def delete(self, request: Request, task_id: str) -> Response:
        if_match = parse_if_match(request.headers.get("If-Match"))
        try:
            services.task_delete(
                tenant_id=tenant_of(request),
                task_id=_task_id(task_id),
                expected_versions=None if if_match.missing else list(if_match.versions),
                actor=actor_of(request),
            )
        except services.TaskNotFound:
            raise _not_found() from None
        except services.VersionMismatch as exc:
            raise _stale(exc.current_version) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class _TaskActionView(APIView):
    """POST /v1/tasks/{id}/pause or /resume: run the use case, answer the task (`use_case`, not DRF's `action`)."""

    use_case: Callable[..., Task]

    def post(self, request: Request, task_id: str) -> Response:
        try:
            task = self.use_case(tenant_id=tenant_of(request), task_id=_task_id(task_id), actor=actor_of(request))
        except services.TaskNotFound:
            raise _not_found() from None
        except limits.ActiveTaskLimitReached as exc:
            raise _active_task_limit(exc) from None
        except services.VersionMismatch as exc:
            # Only resume raises it, after its bounded retries lost to edits every time.
            raise Problem(
                409, "conflict", "The task kept changing; try again.", current_etag=etag(exc.current_version)
            ) from None
        return _task_response(task)


@extend_schema_view(
    post=extend_schema(
        operation_id="tasks_pause",
        summary="Pause a task",
        request=None,
        responses={200: TaskOutput, 404: _PROBLEM},
    )
)
class TaskPauseView(_TaskActionView):
    use_case = staticmethod(services.task_pause)


@extend_schema_view(
    post=extend_schema(
        operation_id="tasks_resume",
        summary="Resume a task at its next future run",
        request=None,
        responses={200: TaskOutput, 404: _PROBLEM, 409: _PROBLEM},
    )
)
class TaskResumeView(_TaskActionView):
    use_case = staticmethod(services.task_resume)
