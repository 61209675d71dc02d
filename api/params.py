"""Query parameters shared by the task and job APIs, so both answer bad input alike.

`limit` is 1-200 (default 50) and an id-shaped cursor or filter is a UUID of at
most 64 characters; anything else is the same 400 `validation-error` naming the
parameter, whichever API it was sent to.
"""

from __future__ import annotations

import re
import uuid

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from api.problems import Problem
from domain.ids import parse_id

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
# ASCII digits, few of them: str.isdigit() admits "²" (int() then raises) and int() refuses 4,300+ digits.
_DIGITS = re.compile(r"[0-9]{1,4}")
MAX_ID_TEXT = 64  # a UUID in any form uuid.UUID accepts; longer is not parsed at all

# The schema's side of the same parameters, for extend_schema(parameters=[...]).
LIMIT_PARAMETER = OpenApiParameter(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE},
    description=f"1-{MAX_PAGE_SIZE}, default {DEFAULT_PAGE_SIZE}",
)
# Task and DLQ pages resume after an id; a task's history after an opaque position.
# An empty value is the same as leaving the parameter out: one string type whose pattern admits
# both (an anyOf of the two read as "string or string" in Redoc).
ID_PARAMETER_SCHEMA = {
    "type": "string",
    "pattern": "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?$",
    "maxLength": 36,
    "description": "a UUID, or empty (the same as leaving it out)",
}
CURSOR_PARAMETER = OpenApiParameter("cursor", ID_PARAMETER_SCHEMA, description="next_cursor of the previous page")
OPAQUE_CURSOR_PARAMETER = OpenApiParameter(
    "cursor", {"type": "string", "maxLength": 128}, description="next_cursor of the previous page (opaque)"
)


def invalid_param(name: str, why: str) -> Problem:
    """The 400 for one bad parameter or header, listed under `errors` like a field."""
    return Problem(400, "validation-error", f"{name}: {why}", errors={name: [why]})


def page_limit(request: Request) -> int:
    """The `limit` query parameter: 1 to MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE when absent."""
    text = request.query_params.get("limit", str(DEFAULT_PAGE_SIZE))
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= MAX_PAGE_SIZE:
        raise invalid_param("limit", f"1 to {MAX_PAGE_SIZE}")
    return int(text)


def query_id(request: Request, name: str, why: str) -> uuid.UUID | None:
    """An optional UUID query parameter (an id cursor or a filter); anything else is a 400 naming it."""
    text = request.query_params.get(name) or None
    if text is None:
        return None
    parsed = parse_id(text) if len(text) <= MAX_ID_TEXT else None
    if parsed is None:
        raise invalid_param(name, why)
    return parsed
