"""`POST /v1/tasks/{id}/backfill`: make a task's runs of a past range (jobs.backfill)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import actor_of, tenant_of
from api.params import invalid_param
from api.problems import Problem, not_found
from api.strict_serializer import StrictSerializer
from domain.ids import parse_id
from history.base import HistoryUnavailable
from jobs import backfill
from tasks.serializers import StrictDateTimeField

_PROBLEM = OpenApiResponse(description="application/problem+json")


class BackfillInput(StrictSerializer):
    # "from" is a Python keyword: declared through the fields mapping below.
    to = StrictDateTimeField(help_text="end of the range, excluded; not in the future")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = StrictDateTimeField(help_text="start of the range, included")
        return {"from": fields.pop("from"), **fields}


class BackfillOutput(serializers.Serializer):
    created = serializers.IntegerField(help_text="pending jobs made, due now")
    existing = serializers.IntegerField(help_text="runs already made (queued or in the history): left as they are")
    excluded = serializers.IntegerField(help_text="runs made skipped: an excluded calendar holds their date")


class TaskBackfillView(APIView):
    @extend_schema(
        operation_id="tasks_backfill",
        summary="Create the task's runs of a past range (idempotent)",
        description=f"One job per run of the task's schedule with scheduled_at in [from, to), at most "
        f"{backfill.MAX_RUNS} per request (more: a 400 naming `to`), as the scheduler makes them: pending with "
        "the task's request, or skipped when an excluded calendar holds the run's date. A run already made "
        "(in the queue or the history) is counted `existing`; calling again makes nothing. The jobs are due at "
        "once and go through the queue like any other: the executors' fair share and the tenant's running-jobs "
        "cap pace them. A paused task is a 409, as is a one-shot.",
        request=BackfillInput,
        examples=[
            OpenApiExample(
                "one day of runs",
                request_only=True,
                value={"from": "2026-11-30T00:00:00Z", "to": "2026-12-01T00:00:00Z"},
            ),
            OpenApiExample("its counts", response_only=True, value={"created": 22, "existing": 1, "excluded": 1}),
        ],
        responses={200: BackfillOutput, 400: _PROBLEM, 404: _PROBLEM, 409: _PROBLEM, 503: _PROBLEM},
    )
    def post(self, request: Request, task_id: str) -> Response:
        tenant_id = tenant_of(request)
        task_uuid = parse_id(task_id)
        if task_uuid is None:
            raise not_found("task")
        serializer = BackfillInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            result = backfill.task_backfill(
                tenant_id=tenant_id,
                task_id=task_uuid,
                start=serializer.validated_data["from"],
                end=serializer.validated_data["to"],
                actor=actor_of(request),
            )
        except backfill.BackfillTaskNotFound:
            raise not_found("task") from None
        except backfill.BackfillRangeError as exc:
            raise invalid_param(exc.field, exc.message) from None
        except backfill.BackfillRefused as exc:
            raise Problem(409, exc.reason, exc.message) from None
        except HistoryUnavailable:
            raise Problem(
                503, "history-unavailable", "The history could not be read; try again.", headers={"Retry-After": "5"}
            ) from None
        return Response(
            BackfillOutput({"created": result.created, "existing": result.existing, "excluded": result.excluded}).data
        )
