"""Tenant API for calendars: `PUT|GET|DELETE /v1/calendars/{name}`, `GET /v1/calendars`.

PUT creates (201) or replaces (200) the whole calendar; If-Match (optional) guards a
replace or a delete with the ETag read. Another tenant's calendar is the same 404 as a
missing one. A delete is refused (409) while a task excludes the calendar.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.params import LIMIT_PARAMETER, OPAQUE_CURSOR_PARAMETER, invalid_param, page_limit
from api.problems import Problem, not_found
from tasks.calendars import rules, selectors, services
from tasks.calendars.models import Calendar
from tasks.calendars.serializers import CalendarInput, CalendarOutput, CalendarPage
from tasks.preconditions import etag, parse_if_match

_PROBLEM = OpenApiResponse(description="application/problem+json")
_IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description='optional: the ETag read (e.g. "3"); the write is refused with 412 if the calendar changed since',
)
_PUT_EXAMPLE = OpenApiExample(
    "Spanish bank holidays",
    request_only=True,
    value={
        "timezone": "Europe/Madrid",
        "dates": ["2027-01-01", "2027-01-06", "2027-12-25"],
        "ranges": [{"from": "2027-08-09", "to": "2027-08-13"}],
    },
)
_OUTPUT_EXAMPLE = OpenApiExample(
    "a calendar",
    response_only=True,
    value={
        "name": "es-holidays",
        "timezone": "Europe/Madrid",
        "dates": ["2027-01-01", "2027-01-06", "2027-12-25"],
        "ranges": [{"from": "2027-08-09", "to": "2027-08-13"}],
        "version": 1,
        "created_at": "2026-12-03T10:00:00Z",
        "updated_at": "2026-12-03T10:00:00Z",
    },
)


def _not_found() -> Problem:
    return not_found("calendar")


def _response(calendar: Calendar, status_code: int = status.HTTP_200_OK) -> Response:
    headers = {"ETag": etag(calendar.version)}
    if status_code == status.HTTP_201_CREATED:
        headers["Location"] = reverse("calendar", args=[calendar.name])
    return Response(CalendarOutput(calendar).data, status=status_code, headers=headers)


def _expected_versions(request: Request) -> list[int] | None:
    if_match = parse_if_match(request.headers.get("If-Match"))
    return None if if_match.missing else list(if_match.versions)


def _stale(current_version: int | None) -> Problem:
    detail = "The calendar changed since you read it; GET it again."
    if current_version is None:
        return Problem(412, "precondition-failed", "There is no such calendar to replace.")
    return Problem(412, "precondition-failed", detail, current_etag=etag(current_version))


class CalendarListView(APIView):
    @extend_schema(
        operation_id="calendars_list",
        summary="List the tenant's calendars by name",
        parameters=[OPAQUE_CURSOR_PARAMETER, LIMIT_PARAMETER],
        responses={200: CalendarPage, 400: _PROBLEM, 401: _PROBLEM},
    )
    def get(self, request: Request) -> Response:
        limit = page_limit(request)
        after = request.query_params.get("cursor") or None
        if after is not None and not rules.is_valid_name(after):
            raise invalid_param("cursor", "not a cursor")
        calendars, next_name = selectors.calendar_page(tenant_id=tenant_of(request), after=after, limit=limit)
        return Response({"results": CalendarOutput(calendars, many=True).data, "next_cursor": next_name})


class CalendarDetailView(APIView):
    @extend_schema(
        operation_id="calendars_get",
        summary="Get one calendar",
        responses={200: CalendarOutput, 404: _PROBLEM},
        examples=[_OUTPUT_EXAMPLE],
    )
    def get(self, request: Request, name: str) -> Response:
        calendar = (
            selectors.calendar_get(tenant_id=tenant_of(request), name=name) if rules.is_valid_name(name) else None
        )
        if calendar is None:
            raise _not_found()
        return _response(calendar)

    @extend_schema(
        operation_id="calendars_put",
        summary="Create or replace a calendar",
        description="The whole calendar: its zone, dates and ranges (inclusive). Runs of tasks excluding it "
        "whose local date (in this zone) it holds are created `skipped` (reason `calendar:<name>`); an edit applies "
        f"to runs not created yet. Bounds: {rules.MAX_CALENDARS_PER_TENANT} calendars per tenant, "
        f"{rules.MAX_ENTRIES} dates and ranges per calendar, a range at most {rules.MAX_RANGE_DAYS} days.",
        parameters=[_IF_MATCH],
        request=CalendarInput,
        examples=[_PUT_EXAMPLE, _OUTPUT_EXAMPLE],
        responses={200: CalendarOutput, 201: CalendarOutput, 400: _PROBLEM, 409: _PROBLEM, 412: _PROBLEM},
    )
    def put(self, request: Request, name: str) -> Response:
        if not rules.is_valid_name(name):
            raise invalid_param("name", rules.NAME_RULE)
        serializer = CalendarInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            calendar, created = services.calendar_put(
                tenant_id=tenant_of(request),
                name=name,
                spec=serializer.validated_data,
                expected_versions=_expected_versions(request),
            )
        except services.TooManyCalendars:
            raise Problem(
                409, "too-many-calendars", f"A tenant holds at most {rules.MAX_CALENDARS_PER_TENANT} calendars."
            ) from None
        except services.VersionMismatch as exc:
            raise _stale(exc.current_version) from None
        return _response(calendar, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(
        operation_id="calendars_delete",
        summary="Delete a calendar (refused while a task excludes it)",
        parameters=[_IF_MATCH],
        responses={204: None, 404: _PROBLEM, 409: _PROBLEM, 412: _PROBLEM},
    )
    def delete(self, request: Request, name: str) -> Response:
        if not rules.is_valid_name(name):
            raise _not_found()
        try:
            services.calendar_delete(
                tenant_id=tenant_of(request), name=name, expected_versions=_expected_versions(request)
            )
        except services.CalendarNotFound:
            raise _not_found() from None
        except services.VersionMismatch as exc:
            raise _stale(exc.current_version) from None
        except services.CalendarInUse as exc:
            raise Problem(
                409,
                "calendar-in-use",
                f"{exc.tasks} task(s) exclude this calendar; remove it from their schedule.exclude_calendars first.",
                tasks=exc.tasks,
            ) from None
        return Response(status=status.HTTP_204_NO_CONTENT)
