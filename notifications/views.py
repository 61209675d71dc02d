"""Tenant API for notifications: the one subscription (PUT, GET, DELETE) and its deliveries.

Thin views over notifications.services and notifications.selectors. The tenant comes from the
token only; another tenant's subscription is the same 404 as none. The URL is checked as a
task's `http.url` is (tasks.targets: the egress policy and the DNS check), since the executors
call it the same way.
"""

from __future__ import annotations

import logging
from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.json_fields import JsonBooleanField, JsonIntegerField, JsonStringField
from api.params import LIMIT_PARAMETER, OPAQUE_CURSOR_PARAMETER, invalid_param, page_limit
from api.problems import Problem, not_found
from api.strict_serializer import StrictSerializer
from domain import notification_events
from history.base import HistoryUnavailable
from history.stores import get_history_store
from jobs import selectors as job_selectors
from notifications import selectors, services
from outbound import egress
from tasks.serializers import url_check_unavailable
from tasks.targets import check_task_url

logger = logging.getLogger(__name__)

_PROBLEM = OpenApiResponse(description="application/problem+json")
_SUBSCRIPTION_EXAMPLE = {
    "url": "https://ops.example.com/jobsched-events",
    "events": ["job.dead", "task.auto_paused", "task.failing"],
    "failing_after": 3,
    "enabled": True,
}


class NotificationInput(StrictSerializer):
    url = JsonStringField(
        max_length=egress.MAX_URL_LENGTH,
        trim_whitespace=False,
        help_text="where the notifications go: checked like a task's http.url (https, a public address)",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=notification_events.EVENT_TYPES),
        allow_empty=False,
        max_length=len(notification_events.EVENT_TYPES) * 2,
        help_text="the event types to send (at least one)",
    )
    failing_after = JsonIntegerField(
        min_value=notification_events.FAILING_AFTER_MIN,
        max_value=notification_events.FAILING_AFTER_MAX,
        default=notification_events.FAILING_AFTER_DEFAULT,
        help_text="task.failing is sent when a task's dead jobs in a row reach this many",
    )
    enabled = JsonBooleanField(default=True, help_text="false: keep the subscription, send nothing")

    def validate_url(self, value: str) -> str:
        try:
            return check_task_url(value, tenant_id=self.context.get("tenant_id"))
        except egress.TargetError as exc:
            raise serializers.ValidationError(exc.message) from None
        except egress.LookupUnfinished:
            raise url_check_unavailable() from None


class NotificationOutput(serializers.Serializer):
    url = serializers.CharField()
    # Plain strings here: the input's enum is the one schema name of the event types.
    events = serializers.ListField(child=serializers.CharField())
    failing_after = serializers.IntegerField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DeliveryOutput(serializers.Serializer):
    """One notification: the event (its id is the call's webhook-id and the body's id) and how the call went."""

    event_id = serializers.UUIDField()
    event_type = serializers.CharField(allow_null=True, help_text="one of the subscription's event types")
    task_id = serializers.UUIDField(allow_null=True, help_text="the task the event is about")
    # A string: a third enum on a field named status made drf-spectacular name them by hash.
    status = serializers.CharField(help_text="pending, running, succeeded or dead (its job's status)")
    attempts = serializers.IntegerField(help_text="calls made so far")
    http_status = serializers.IntegerField(allow_null=True, help_text="the last call's HTTP status")
    error = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    next_attempt_at = serializers.DateTimeField(allow_null=True)


class DeliveryPage(serializers.Serializer):
    results = DeliveryOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def _not_found() -> Problem:
    return not_found("notification subscription")


class NotificationView(APIView):
    @extend_schema(
        operation_id="notifications_get",
        summary="The tenant's notification subscription",
        responses={200: NotificationOutput, 404: _PROBLEM},
        examples=[
            OpenApiExample(
                "a subscription",
                response_only=True,
                value={
                    **_SUBSCRIPTION_EXAMPLE,
                    "created_at": "2027-01-04T08:15:02.123456Z",
                    "updated_at": "2027-01-04T08:15:02.123456Z",
                },
            )
        ],
    )
    def get(self, request: Request) -> Response:
        subscription = selectors.subscription_get(tenant_id=tenant_of(request))
        if subscription is None:
            raise _not_found()
        return Response(NotificationOutput(subscription).data)

    @extend_schema(
        operation_id="notifications_put",
        summary="Create or replace the tenant's notification subscription",
        description="One subscription per tenant: where to send which events. Each notification is a "
        "Standard Webhooks call signed with the tenant's signing secrets (webhook-id: the event id), "
        "retried on its own budget; see docs/how-to/notifications.md.",
        request=NotificationInput,
        examples=[
            OpenApiExample("dead jobs, pauses and failing tasks", request_only=True, value=_SUBSCRIPTION_EXAMPLE)
        ],
        responses={200: NotificationOutput, 201: NotificationOutput, 400: _PROBLEM, 503: _PROBLEM},
    )
    def put(self, request: Request) -> Response:
        tenant_id = tenant_of(request)
        serializer = NotificationInput(data=request.data, context={"tenant_id": tenant_id})
        serializer.is_valid(raise_exception=True)
        data: dict[str, Any] = serializer.validated_data
        subscription, created = services.subscription_put(tenant_id=tenant_id, **data)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(NotificationOutput(subscription).data, status=code)

    @extend_schema(
        operation_id="notifications_delete",
        summary="Delete the tenant's notification subscription (queued notifications still go)",
        responses={204: None, 404: _PROBLEM},
    )
    def delete(self, request: Request) -> Response:
        try:
            services.subscription_delete(tenant_id=tenant_of(request))
        except services.SubscriptionNotFound:
            raise _not_found() from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListView(APIView):
    @extend_schema(
        operation_id="notifications_deliveries",
        summary="The tenant's notification deliveries, newest first",
        parameters=[OPAQUE_CURSOR_PARAMETER, LIMIT_PARAMETER],
        responses={200: DeliveryPage, 400: _PROBLEM, 503: _PROBLEM},
        examples=[
            OpenApiExample(
                "a dead job, told",
                response_only=True,
                value={
                    "results": [
                        {
                            "event_id": "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                            "event_type": "job.dead",
                            "task_id": "0194a1b0-0000-7000-8000-000000000001",
                            "status": "succeeded",
                            "attempts": 1,
                            "http_status": 200,
                            "error": None,
                            "created_at": "2027-01-04T08:15:02.123456Z",
                            "finished_at": "2027-01-04T08:15:02.421Z",
                            "next_attempt_at": None,
                        }
                    ],
                    "next_cursor": None,
                },
            )
        ],
    )
    def get(self, request: Request) -> Response:
        limit = page_limit(request)
        cursor_text = request.query_params.get("cursor") or None
        before = job_selectors.decode_cursor(cursor_text) if cursor_text is not None else None
        if cursor_text is not None and before is None:
            raise invalid_param("cursor", "not a cursor")
        try:
            page, next_position = selectors.deliveries_page(
                tenant_id=tenant_of(request), before=before, limit=limit, store=get_history_store()
            )
        except HistoryUnavailable as exc:
            logger.warning("history store unavailable", extra={"event": "history_unavailable", "error": str(exc)})
            raise Problem(
                503,
                "history-unavailable",
                "The job history store is unavailable; try again.",
                headers={"Retry-After": "5"},
            ) from exc
        next_cursor = job_selectors.encode_cursor(next_position) if next_position else None
        return Response({"results": DeliveryOutput(page, many=True).data, "next_cursor": next_cursor})
