"""Tenant API for rate limits per origin: set (create or replace), list, get, delete.

`POST /v1/rate-limits` with an origin, `per_second` and `burst` creates the
tenant's limit for that origin (201) or replaces it (200); every executor keeps
to it from its next claim (jobs.queue.pacing). Another tenant's limit is the same
404 as a missing one.
"""

from __future__ import annotations

import uuid

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.json_fields import JsonIntegerField, JsonNumberField, JsonStringField
from api.params import CURSOR_PARAMETER, LIMIT_PARAMETER, page_limit, query_id
from api.problems import Problem, not_found
from api.strict_serializer import StrictSerializer
from domain.ids import parse_id
from ratelimits import selectors, services
from ratelimits.origins import MAX_ORIGIN_LENGTH, OriginError, normalise_origin

_PROBLEM = OpenApiResponse(description="application/problem+json")
_EXAMPLE = {
    "id": "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "origin": "https://hooks.example.com:443",
    "per_second": 50.0,
    "burst": 50,
    "created_at": "2027-01-04T08:15:02.123456Z",
    "updated_at": "2027-01-04T08:15:02.123456Z",
}


class RateLimitInput(StrictSerializer):
    origin = JsonStringField(
        max_length=MAX_ORIGIN_LENGTH,
        help_text="scheme://host[:port], http or https; stored lowercased with the port written out",
    )
    per_second = JsonNumberField(
        min_value=services.MIN_PER_SECOND,
        max_value=services.MAX_PER_SECOND,
        help_text="calls per second to this origin, across every task and executor",
    )
    burst = JsonIntegerField(
        min_value=1, max_value=services.MAX_BURST, help_text="calls allowed at once above the rate"
    )

    def validate_origin(self, value: str) -> str:
        try:
            return normalise_origin(value)
        except OriginError as exc:
            raise serializers.ValidationError(str(exc)) from None


class RateLimitOutput(serializers.Serializer):
    id = serializers.UUIDField()
    origin = serializers.CharField()
    per_second = serializers.FloatField()
    burst = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class RateLimitPage(serializers.Serializer):
    results = RateLimitOutput(many=True)
    next_cursor = serializers.UUIDField(allow_null=True)


def _limit_id(raw: str) -> uuid.UUID:
    limit_id = parse_id(raw)
    if limit_id is None:
        raise not_found("rate limit")
    return limit_id


class RateLimitListCreateView(APIView):
    @extend_schema(
        operation_id="rate_limits_list",
        summary="List the tenant's rate limits, newest first",
        parameters=[CURSOR_PARAMETER, LIMIT_PARAMETER],
        examples=[OpenApiExample("one limit", response_only=True, value={"results": [_EXAMPLE], "next_cursor": None})],
        responses={200: RateLimitPage, 400: _PROBLEM},
    )
    def get(self, request: Request) -> Response:
        limit = page_limit(request)
        before = query_id(request, "cursor", "not a cursor")
        rows, next_id = selectors.rate_limit_page(tenant_id=tenant_of(request), before=before, limit=limit)
        return Response(
            {"results": RateLimitOutput(rows, many=True).data, "next_cursor": str(next_id) if next_id else None}
        )

    @extend_schema(
        operation_id="rate_limits_set",
        summary="Create (201) or replace (200) the tenant's rate limit for an origin",
        description="Every executor keeps to it from its next claim: jobs over the limit stay pending and "
        "come due when a token is free (never failed, never lost).",
        request=RateLimitInput,
        examples=[
            OpenApiExample(
                "50 calls a second, 50 at once",
                request_only=True,
                value={"origin": "https://hooks.example.com", "per_second": 50, "burst": 50},
            ),
            OpenApiExample("created", response_only=True, status_codes=["201"], value=_EXAMPLE),
            OpenApiExample("replaced", response_only=True, status_codes=["200"], value=_EXAMPLE),
        ],
        responses={200: RateLimitOutput, 201: RateLimitOutput, 400: _PROBLEM, 409: _PROBLEM},
    )
    def post(self, request: Request) -> Response:
        serializer = RateLimitInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            limit, created = services.rate_limit_set(
                tenant_id=tenant_of(request), origin=data["origin"], per_second=data["per_second"], burst=data["burst"]
            )
        except services.TooManyRateLimits:
            raise Problem(
                409,
                "rate-limits-limit",
                f"A tenant has at most {services.MAX_RATE_LIMITS} rate limits; delete one first.",
            ) from None
        location = reverse("rate-limit", args=[str(limit.pk)])
        return Response(
            RateLimitOutput(limit).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers={"Location": location},
        )


class RateLimitDetailView(APIView):
    @extend_schema(
        operation_id="rate_limits_get",
        summary="One rate limit",
        examples=[OpenApiExample("a limit", response_only=True, value=_EXAMPLE)],
        responses={200: RateLimitOutput, 404: _PROBLEM},
    )
    def get(self, request: Request, limit_id: str) -> Response:
        limit = selectors.rate_limit_get(tenant_id=tenant_of(request), limit_id=_limit_id(limit_id))
        if limit is None:
            raise not_found("rate limit")
        return Response(RateLimitOutput(limit).data)

    @extend_schema(
        operation_id="rate_limits_delete",
        summary="Delete a rate limit: the origin is no longer paced from the executors' next claim",
        responses={204: None, 404: _PROBLEM},
    )
    def delete(self, request: Request, limit_id: str) -> Response:
        try:
            services.rate_limit_delete(tenant_id=tenant_of(request), limit_id=_limit_id(limit_id))
        except services.RateLimitNotFound:
            raise not_found("rate limit") from None
        return Response(status=status.HTTP_204_NO_CONTENT)
