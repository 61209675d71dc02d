"""`GET /v1/tasks/export` and `POST /v1/tasks/import`: a tenant's tasks as JSON lines, out and back in.

A line is a task in the create body's shape plus its read-only `id` and `status`
(ignored on import); a secret travels by its name (`secret_ref`), never its value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import actor_of, tenant_of
from api.params import invalid_param
from api.problems import Problem, flatten_errors, not_found
from tasks import importing, limits, selectors, services, targets
from tasks.calendars import services as calendar_services
from tasks.models import Task
from tasks.serializers import TaskInput, input_of, model_fields
from tasks.views import TaskDetailView

JSON_LINES = "application/x-ndjson"
_PROBLEM = OpenApiResponse(description="application/problem+json")
EXPORT_PAGE = 500


def export_line(task: Task) -> dict[str, Any]:
    return {"id": str(task.pk), "status": task.status, **input_of(task)}


def _export_lines(tenant_id: str) -> Iterator[bytes]:
    for task in selectors.task_export(tenant_id=tenant_id, batch=EXPORT_PAGE):
        yield json.dumps(export_line(task), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class JsonLinesParser(BaseParser):
    """One JSON value per line (blank lines skipped), at most MAX_IMPORT_LINES; a bad line is a 400 naming it."""

    media_type = JSON_LINES

    # The lines as a list, which request.data then is (DRF's stubs type parse() as a mapping).
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> list[Any]:  # type: ignore[override]
        try:
            text = stream.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("the body is not UTF-8 text") from None
        lines: list[Any] = []
        # Numbered as the plan numbers them: the Nth task, blank lines not counted.
        for raw in text.splitlines():
            if not raw.strip():
                continue
            number = len(lines) + 1
            if len(lines) == importing.MAX_IMPORT_LINES:
                raise ValidationError({"lines": [f"at most {importing.MAX_IMPORT_LINES} tasks per import"]})
            try:
                lines.append(json.loads(raw))
            except (ValueError, RecursionError):
                raise ValidationError({f"lines[{number}]": ["not a JSON object on one line"]}) from None
        return lines


def _validate_line(data: Any, *, tenant_id: str, current: Task | None) -> tuple[dict[str, Any], Any]:
    context: dict[str, Any] = {"tenant_id": tenant_id}
    if current is not None:
        context["current"] = current
    try:
        validated = TaskInput.validated(data, context=context)
    except ValidationError as exc:
        raise importing.LineInvalid(flatten_errors(exc.detail)) from None
    return model_fields(validated)


def _dry_run(request: Request) -> bool:
    value = request.query_params.get("dry_run", "false")
    if value not in {"true", "false", "1", "0"}:
        raise invalid_param("dry_run", "true or false")
    return value in {"true", "1"}


ImportResult = inline_serializer(
    "TaskImportResult",
    {
        "dry_run": serializers.BooleanField(),
        "created": serializers.IntegerField(),
        "updated": serializers.IntegerField(),
        "unchanged": serializers.IntegerField(),
        "lines": inline_serializer(
            "TaskImportLine",
            {
                "line": serializers.IntegerField(),
                "name": serializers.CharField(),
                "action": serializers.ChoiceField(choices=["create", "update", "unchanged"]),
                "id": serializers.UUIDField(allow_null=True, help_text="null for a create in a dry run"),
                "fields": serializers.ListField(child=serializers.CharField(), help_text="changed by an update"),
            },
            many=True,
        ),
    },
)


def _count(planned: list[importing.PlannedLine], action: str) -> int:
    return sum(item.action == action for item in planned)


class _BesideTheTaskRoute(APIView):
    """`/v1/tasks/export` and `/v1/tasks/import` also match `/v1/tasks/{task_id}`, whose id they are not.

    A verb of the task route they do not take answers as the task route answers any malformed
    id, a 404, where a 405 would tell a client that a task route refused its verb.
    """

    # DRF's stubs narrow Django's request type here and ignore the override themselves.
    def http_method_not_allowed(self, request: Request, *args: Any, **kwargs: Any) -> Response:  # type: ignore[override]
        if request.method in _TASK_ROUTE_METHODS:
            raise not_found("task")
        return super().http_method_not_allowed(request, *args, **kwargs)


_TASK_ROUTE_METHODS = frozenset(TaskDetailView().allowed_methods) - {"OPTIONS"}


class TaskExportView(_BesideTheTaskRoute):
    @extend_schema(
        operation_id="tasks_export",
        summary="Export the tenant's tasks as JSON lines",
        description="One live task per line, oldest first, in the create body's shape plus `id` and `status`; "
        "secrets by name only. `POST /v1/tasks/import` takes the same lines.",
        # One object per line: described as the array those lines make.
        responses={(200, JSON_LINES): OpenApiTypes.OBJECT, 401: _PROBLEM},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        return StreamingHttpResponse(_export_lines(tenant_of(request)), content_type=JSON_LINES)


class TaskImportView(_BesideTheTaskRoute):
    parser_classes = [JsonLinesParser]

    @extend_schema(
        operation_id="tasks_import",
        summary="Import tasks from JSON lines (upsert by name, all or nothing)",
        description=f"At most {importing.MAX_IMPORT_LINES} lines, each a task as `POST /v1/tasks` takes it. A name "
        "the tenant has no live task of is created; one it has is edited where it differs. Any refused line "
        "makes a 400 naming it (`lines[3].schedule.cron`) and nothing is written. `?dry_run=true` answers the "
        "plan and writes nothing. Importing the same lines twice changes nothing the second time.",
        parameters=[OpenApiParameter("dry_run", OpenApiTypes.BOOL, OpenApiParameter.QUERY)],
        request={JSON_LINES: TaskInput(many=True)},
        responses={200: ImportResult, 400: _PROBLEM, 401: _PROBLEM, 409: _PROBLEM, 412: _PROBLEM, 503: _PROBLEM},
    )
    def post(self, request: Request) -> Response:
        tenant_id = tenant_of(request)
        dry_run = _dry_run(request)
        lines = request.data
        if not isinstance(lines, list) or not lines:
            raise invalid_param("lines", "send at least one task, one JSON object per line")
        try:
            with targets.lookups_within(settings.DNS_API_REQUEST_LOOKUP_SECONDS):
                planned = importing.tasks_import_plan(tenant_id=tenant_id, lines=lines, validate=_validate_line)
            if not dry_run:
                importing.tasks_import_apply(tenant_id=tenant_id, planned=planned, actor=actor_of(request))
        except importing.ImportRefused as exc:
            raise Problem(
                400,
                "validation-error",
                f"{len(exc.errors)} problem(s) in the import; nothing was written.",
                errors=exc.errors,
            ) from None
        except (services.VersionMismatch, services.TaskNotFound, calendar_services.CalendarNotFound):
            # A calendar a line names deleted since the plan read it is the same kind of race.
            raise Problem(
                412, "precondition-failed", "A task changed while importing; nothing was written. Import again."
            ) from None
        except limits.ActiveTaskLimitReached as exc:
            raise Problem(
                409,
                "active-task-limit",
                f"The import would exceed this tenant's {exc.limit} active tasks; nothing was written.",
                limit="max_active_tasks",
                max_active_tasks=exc.limit,
                active_tasks=exc.active,
            ) from None
        return Response(
            {
                "dry_run": dry_run,
                "created": _count(planned, importing.CREATE),
                "updated": _count(planned, importing.UPDATE),
                "unchanged": _count(planned, importing.UNCHANGED),
                "lines": [
                    {
                        "line": item.line,
                        "name": item.name,
                        "action": item.action,
                        "id": str(item.task_id) if item.task_id else None,
                        "fields": item.fields,
                    }
                    for item in planned
                ],
            }
        )
