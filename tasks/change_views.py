"""GET /v1/tasks/{id}/changes: a task's audit trail, newest first, in cursor pages (tasks.changes reads it)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.params import CURSOR_PARAMETER, LIMIT_PARAMETER, page_limit, query_id
from api.problems import not_found
from domain.ids import parse_id
from tasks import changes
from tasks.models import TaskChangeAction

_PROBLEM = OpenApiResponse(description="application/problem+json")


class TaskChangeFieldOutput(serializers.Serializer):
    field = serializers.CharField(help_text='as the API names it: "http.url", "http.headers.X-Team", "labels.env"')
    old = serializers.JSONField(allow_null=True, help_text="null when the field was not set (a create)")
    new = serializers.JSONField(allow_null=True, help_text="null when the field was removed")
    masked = serializers.BooleanField(help_text="a credential was masked in old or new (its value is never kept)")
    truncated = serializers.BooleanField(help_text=f"old or new was cut to {changes.MAX_VALUE_CHARS} characters")


class TaskChangeOutput(serializers.Serializer):
    id = serializers.UUIDField()
    task_id = serializers.UUIDField()
    action = serializers.ChoiceField(choices=TaskChangeAction.choices)
    actor = serializers.CharField(help_text='"token:<sub>", "tenant:<id>", "staff:<username>" or "system"')
    at = serializers.DateTimeField()
    version = serializers.IntegerField(allow_null=True, help_text="the task's version (ETag) after the change")
    changes = TaskChangeFieldOutput(many=True)


class TaskChangePage(serializers.Serializer):
    results = TaskChangeOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)


_PAGE_EXAMPLE = OpenApiExample(
    "an edit by a user of the tenant",
    response_only=True,
    value={
        "results": [
            {
                "id": "0193a1f2-7c4e-7d2a-9b1e-3f5c6d7e8f90",
                "task_id": "0193a1e0-1111-7222-8333-944455566677",
                "action": "update",
                "actor": "token:alice@example.com",
                "at": "2026-12-03T13:20:05.123456Z",
                "version": 4,
                "changes": [
                    {
                        "field": "schedule",
                        "old": {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"},
                        "new": {"cron": "30 8 * * 1-5", "timezone": "Europe/Madrid"},
                        "masked": False,
                        "truncated": False,
                    },
                    {
                        "field": "http.headers.X-Api-Key",
                        "old": "••••••",
                        "new": "••••••",
                        "masked": True,
                        "truncated": False,
                    },
                ],
            }
        ],
        "next_cursor": "0193a1f2-7c4e-7d2a-9b1e-3f5c6d7e8f90",
    },
)


class TaskChangesView(APIView):
    @extend_schema(
        operation_id="tasks_changes",
        summary="A task's changes (audit trail), newest first",
        description="Every create, edit, pause, resume, delete, import and automatic pause of the task, with who "
        "made it, when, and each changed field's old and new value (credentials masked, long values cut). A "
        "deleted task's changes stay readable; records older than the service's retention are purged.",
        parameters=[CURSOR_PARAMETER, LIMIT_PARAMETER],
        responses={200: TaskChangePage, 400: _PROBLEM, 401: _PROBLEM, 404: _PROBLEM},
        examples=[_PAGE_EXAMPLE],
    )
    def get(self, request: Request, task_id: str) -> Response:
        task = parse_id(task_id)
        if task is None:
            raise not_found("task")
        limit = page_limit(request)
        before = query_id(request, "cursor", "not a cursor")
        page = changes.task_changes_page(tenant_id=tenant_of(request), task_id=task, before=before, limit=limit)
        if page is None:
            raise not_found("task")
        rows, next_id = page
        return Response(
            {"results": TaskChangeOutput(rows, many=True).data, "next_cursor": str(next_id) if next_id else None}
        )
