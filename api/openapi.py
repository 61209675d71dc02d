"""What the OpenAPI schema says about every operation, added in one place after generation.

drf-spectacular describes each view from its `extend_schema`; the rules that hold for
the whole API are written here once instead of on every view, so a route added later
is described alike:

- every error response is `application/problem+json` with the `Problem` schema;
- every authenticated operation can answer 401 and 429 (with `Retry-After`), every one
  with a body 400, 413 and 415, every one with an id in its path 404;
- a response that returns a task carries its `ETag`, a 201 its `Location`, a 503 its
  `Retry-After`;
- a PATCH body is a JSON merge patch (RFC 7396): the same fields as the create body,
  none of them required at any depth, accepted as `application/json` or
  `application/merge-patch+json`.

- every error status of every operation has examples of its own: the problems that
  operation can really answer with that status (`_problem_examples`), not one example for all;
- the tags come in the order a reader needs them (tasks first), each with a description.

The problem types themselves are listed in `PROBLEM_TYPES` (and in docs/problems.md);
a test checks that every type the code raises is listed.
"""

from __future__ import annotations

import copy
from http import HTTPStatus
from typing import Any

from api.problems import PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_BASE

MERGE_PATCH_CONTENT_TYPE = "application/merge-patch+json"

# slug -> what it means; the URI of each is PROBLEM_TYPE_BASE + slug.
PROBLEM_TYPES: dict[str, str] = {
    "validation-error": "A field, parameter or header is invalid; `errors` maps each offending name to its reasons.",
    "bad-request": "The request could not be read (e.g. malformed JSON).",
    "unauthorized": "No valid bearer token: missing, malformed, expired, wrong key, audience or tenant claim.",
    "forbidden": "The token is valid but does not grant this.",
    "not-found": "No such resource for this tenant: missing, deleted, another tenant's or a malformed id alike.",
    "method-not-allowed": "The route exists but not with this method.",
    "not-acceptable": "The Accept header asks for a representation the API does not serve.",
    "conflict": "The resource kept changing while the request was applied; try again.",
    "job-not-dead": "Only a dead job can be retried.",
    "active-task-limit": "One more active task would pass the tenant's limit; `limit` names it (max_active_tasks).",
    "job-not-pending": "Only a pending job can be cancelled (a running one finishes; a finished one is done).",
    "job-cancelled": "The job was cancelled (a cancel, a discard, or its task's pause before it ran); not retryable.",
    "task-paused": "The task is paused: nothing of it runs (retries and runs now included) until it is resumed.",
    "task-deleted": "The job's task was deleted (its pending and dead jobs were cancelled with it); not retryable.",
    "signing-secrets-limit": "The tenant already has two live signing secrets; delete one before creating another.",
    "rate-limits-limit": "The tenant already has the most rate limits it may; delete one first.",
    "precondition-failed": "If-Match does not name the current version; `current_etag` says which is.",
    "precondition-required": "This edit needs If-Match with the ETag read.",
    "content-too-large": "The request body is larger than the API accepts.",
    "unsupported-media-type": "The body's Content-Type is not one the operation accepts.",
    "idempotency-key-reused": "This Idempotency-Key was used before with a different request body.",
    "idempotency-key-job-gone": "This run now's Idempotency-Key made a job that is in neither the queue nor the "
    "history any more; it is not run again under that key (use a new key to run the task).",
    "too-many-secrets": "The tenant already holds the most secrets it may; delete one first.",
    "too-many-requests": "The tenant's request rate is exceeded; wait `Retry-After` seconds.",
    "internal-server-error": "A bug on our side; it has been logged.",
    "url-check-unavailable": "The task URL's host name could not be looked up now (timed out, or too many lookups "
    "in flight), so the URL could not be checked; nothing was saved. Retry after `Retry-After` seconds.",
    "history-unavailable": "The job history store does not answer; the page would be incomplete. Retry later.",
    "not-ready": "The database does not answer (readiness probe).",
    "too-many-calendars": "The tenant already holds the most calendars it may (100); delete one first.",
    "calendar-in-use": "Tasks still exclude the calendar (`tasks` counts them); remove it from their "
    "schedule.exclude_calendars first.",
    "not-recurring": "A one-shot task has no runs to backfill.",
}

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details. Other members may follow (e.g. `current_etag`).",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {
            "type": "string",
            "format": "uri",
            "description": f"{PROBLEM_TYPE_BASE}<slug>; the slugs are listed in docs/reference/problems.md",
            "example": PROBLEM_TYPE_BASE + "validation-error",
        },
        "title": {"type": "string", "example": "Bad Request"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599, "example": 400},
        "detail": {"type": "string", "example": "http.url: destination not allowed"},
        "errors": {
            "type": "object",
            "description": "For validation errors: each offending field, parameter or header and its reasons.",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
            "example": {"http.url": ["destination not allowed"]},
        },
        "current_etag": {"type": "string", "description": "With 409 and 412: the task's current ETag."},
    },
    "additionalProperties": True,
}

_HEADERS: dict[str, dict[str, Any]] = {
    "ETag": {"description": 'The task\'s version, quoted (e.g. "7"); send it back in If-Match.', "type": "string"},
    "Location": {"description": "The URL of the resource created.", "type": "string"},
    "Retry-After": {"description": "Seconds to wait before trying again.", "type": "integer"},
}


def _header(name: str) -> dict[str, Any]:
    spec = _HEADERS[name]
    return {"description": spec["description"], "schema": {"type": spec["type"]}}


def _problem_response(code: int, description: str | None = None) -> dict[str, Any]:
    return {
        "description": description or HTTPStatus(code).phrase,
        "content": {PROBLEM_CONTENT_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


# The tags in reading order, with what each holds (Swagger UI and Redoc list them so).
TAGS: list[dict[str, str]] = [
    {
        "name": "tasks",
        "description": "Tasks: an HTTP call on a cron schedule or at one time; run now, dry run, "
        "preview, pause, resume, a task's job history and its changes (audit trail).",
    },
    {"name": "jobs", "description": "Jobs: one run of a task each; read, retry a dead one, cancel a pending one."},
    {"name": "dlq", "description": "The dead-letter queue: jobs that ran out of attempts."},
    {"name": "schedules", "description": "Preview a schedule's next runs before saving a task."},
    {"name": "secrets", "description": "Secrets a task sends as its Authorization header; write-only values."},
    {"name": "signing-secrets", "description": "Standard Webhooks signing secrets: every call is signed."},
    {"name": "rate-limits", "description": "Calls per second to an origin, kept by every executor together."},
    {"name": "calendars", "description": "Calendars: dates in a zone whose runs a task skips (exclude_calendars)."},
]

# Example bodies of each problem type: (detail, other members).
_EXAMPLE_PROBLEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "bad-request": ("JSON parse error - Expecting value: line 1 column 1 (char 0)", {}),
    "unauthorized": ("Token is expired.", {}),
    "content-too-large": ("The request body is too large.", {}),
    "unsupported-media-type": ('Unsupported media type "text/plain" in request.', {}),
    "too-many-requests": ("Request was throttled. Expected available in 12 seconds.", {}),
    "precondition-failed": ("The task changed since you read it; GET it again.", {"current_etag": '"8"'}),
    "precondition-required": ('Send If-Match with the task\'s ETag (e.g. If-Match: "7").', {}),
    "idempotency-key-reused": (
        "This Idempotency-Key was used with a different request body.",
        {"errors": {"Idempotency-Key": ["used with a different request body"]}},
    ),
    "history-unavailable": ("The job history store is unavailable; try again.", {}),
    "conflict": ("The task kept changing; try again.", {"current_etag": '"9"'}),
    "active-task-limit": (
        "This tenant already has 10000 active tasks, its limit (max_active_tasks = 10000); pause or delete one first.",
        {"limit": "max_active_tasks", "max_active_tasks": 10000, "active_tasks": 10000},
    ),
    "task-paused": ("The task is paused; resume it to run it.", {}),
    "idempotency-key-job-gone": (
        "The job this Idempotency-Key made is in neither the queue nor the history; it is not run again under "
        "this key. Send a new key to run the task.",
        {"job_id": "0190c5e2-7b3a-7f00-8000-0000000000aa"},
    ),
    "job-not-dead": ("Only a dead job can be retried; this one is not dead.", {}),
    "job-cancelled": (
        "This job was cancelled (by a cancel, a discard from the dead-letter queue, or its task's "
        "pause); a cancelled job cannot be retried.",
        {},
    ),
    "task-deleted": ("This job's task was deleted; its jobs cannot be retried.", {}),
    "job-not-pending": ("Only a pending job can be cancelled; this one is not pending.", {}),
    "too-many-secrets": ("A tenant holds at most 500 secrets.", {}),
    "signing-secrets-limit": ("A tenant has at most 2 live signing secrets; delete one first.", {}),
    "rate-limits-limit": ("A tenant has at most 100 rate limits; delete one first.", {}),
    "too-many-calendars": ("A tenant holds at most 100 calendars.", {}),
    "calendar-in-use": (
        "2 task(s) exclude this calendar; remove it from their schedule.exclude_calendars first.",
        {"tasks": 2},
    ),
    "not-recurring": ("A one-shot task has no runs to backfill.", {}),
}

# The 409s each operation can answer; an operation not listed answers the generic `conflict`.
_CONFLICTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("post", "/v1/tasks"): ("active-task-limit",),
    ("post", "/v1/tasks/{task_id}/resume"): ("active-task-limit",),
    ("post", "/v1/tasks/{task_id}/run"): ("task-paused", "idempotency-key-job-gone"),
    ("post", "/v1/jobs/{job_id}/retry"): ("job-not-dead", "job-cancelled", "task-paused", "task-deleted"),
    ("post", "/v1/jobs/{job_id}/cancel"): ("job-not-pending",),
    ("put", "/v1/secrets/{name}"): ("too-many-secrets",),
    ("post", "/v1/signing-secrets"): ("signing-secrets-limit",),
    ("post", "/v1/rate-limits"): ("rate-limits-limit",),
    ("put", "/v1/calendars/{name}"): ("too-many-calendars",),
    ("delete", "/v1/calendars/{name}"): ("calendar-in-use",),
    ("post", "/v1/tasks/{task_id}/backfill"): ("task-paused", "not-recurring"),
}

# What a 404 names, by the path's first segment (api.problems.not_found's words).
_NOT_FOUND_THING = {
    "tasks": "task",
    "jobs": "job",
    "secrets": "secret",
    "signing-secrets": "signing secret",
    "rate-limits": "rate limit",
    "calendars": "calendar",
}


def _validation_example(path: str, has_body: bool) -> tuple[str, dict[str, Any]]:
    if not has_body:
        return "limit: 1 to 200", {"errors": {"limit": ["1 to 200"]}}
    if path.endswith("/backfill"):
        reason = "the range holds more than 1000 runs; backfill it in parts"
        return f"to: {reason}", {"errors": {"to": [reason]}}
    if path.startswith("/v1/calendars"):
        reason = "a date YYYY-MM-DD from 1970-01-01 to 2199-12-31"
        return f"dates[3]: {reason}", {"errors": {"dates[3]": [reason]}}
    if path.startswith("/v1/tasks"):
        return "http.url: destination not allowed", {"errors": {"http.url": ["destination not allowed"]}}
    if path.startswith("/v1/rate-limits"):
        reason = "only http and https origins"
        return f"origin: {reason}", {"errors": {"origin": [reason]}}
    if path.startswith("/v1/schedules"):
        reason = "not a valid cron expression"
        return f"cron: {reason}", {"errors": {"cron": [reason]}}
    return "value: This field is required.", {"errors": {"value": ["This field is required."]}}


def _problem_examples(code: int, method: str, path: str, operation: dict[str, Any]) -> dict[str, Any]:
    """The problems this operation answers with `code`, as named OpenAPI examples."""
    if code == 400:
        has_body = "requestBody" in operation
        detail, extra = _validation_example(path, has_body)
        problems = [("validation-error", detail, extra)]
        if has_body:
            problems.append(("bad-request", *_EXAMPLE_PROBLEMS["bad-request"]))
    elif code == 404:
        thing = _NOT_FOUND_THING.get(path.split("/")[2], "resource")
        problems = [("not-found", f"No such {thing}.", {})]
    elif code == 409:
        slugs = _CONFLICTS.get((method, path), ("conflict",))
        problems = [(slug, *_EXAMPLE_PROBLEMS[slug]) for slug in slugs]
    else:
        slug = {
            401: "unauthorized",
            413: "content-too-large",
            415: "unsupported-media-type",
            412: "precondition-failed",
            422: "idempotency-key-reused",
            428: "precondition-required",
            429: "too-many-requests",
            503: "history-unavailable",
        }.get(code)
        if slug is None:
            phrase = HTTPStatus(code).phrase
            problems = [(phrase.lower().replace(" ", "-"), phrase + ".", {})]
        else:
            problems = [(slug, *_EXAMPLE_PROBLEMS[slug])]
    return {
        slug: {
            "summary": PROBLEM_TYPES.get(slug, HTTPStatus(code).phrase).split(";")[0].rstrip("."),
            "value": {
                "type": PROBLEM_TYPE_BASE + slug,
                "title": HTTPStatus(code).phrase,
                "status": code,
                "detail": detail,
                **extra,
            },
        }
        for slug, detail, extra in problems
    }


def _is_public(operation: dict[str, Any]) -> bool:
    # drf-spectacular marks an operation anyone may call with an empty requirement ({}).
    return {} in operation.get("security", [{}])


def _returns_task(response: dict[str, Any]) -> bool:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return schema.get("$ref") == "#/components/schemas/TaskOutput"


def _without_required(schema: Any, schemas: dict[str, Any]) -> Any:
    """A deep copy of `schema` with every `required` list dropped and every $ref inlined."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _without_required(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas)
        return {key: _without_required(value, schemas) for key, value in schema.items() if key != "required"}
    if isinstance(schema, list):
        return [_without_required(item, schemas) for item in schema]
    return copy.deepcopy(schema)


def _merge_patch_body(operation: dict[str, Any], schemas: dict[str, Any]) -> None:
    content = operation.get("requestBody", {}).get("content", {})
    json_body = content.get("application/json")
    if not json_body:
        return
    name = json_body["schema"].get("$ref", "").rsplit("/", 1)[-1].removeprefix("Patched")
    patch_name = f"{name}MergePatch"
    if patch_name not in schemas:
        patch = _without_required(json_body["schema"], schemas)
        patch["description"] = (
            "A JSON merge patch (RFC 7396): top-level fields replace, `http` merges key by key "
            "(`headers` as a whole), `schedule` replaces whole; `null` clears a nullable field (`secret_ref`). "
            "The merged task is then validated like a create body."
        )
        schemas[patch_name] = patch
    body = {"schema": {"$ref": f"#/components/schemas/{patch_name}"}}
    if "examples" in json_body:
        body["examples"] = json_body["examples"]
    operation["requestBody"]["content"] = {"application/json": body, MERGE_PATCH_CONTENT_TYPE: copy.deepcopy(body)}


def describe_whole_api(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Problem"] = copy.deepcopy(PROBLEM_SCHEMA)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            if method == "patch":
                _merge_patch_body(operation, schemas)
            extra: list[int] = []
            if not _is_public(operation):
                extra += [401, 429]
            if "requestBody" in operation:
                extra += [400, 413, 415]
            if "{" in path:
                extra.append(404)
            for code in extra:
                responses.setdefault(str(code), {})
            for code_text, response in list(responses.items()):
                code = int(code_text)
                if code >= 400:
                    description = response.get("description")
                    if not description or description == PROBLEM_CONTENT_TYPE:
                        description = None
                    response = responses[code_text] = {**_problem_response(code, description)}
                    response["content"][PROBLEM_CONTENT_TYPE]["examples"] = _problem_examples(
                        code, method, path, operation
                    )
                headers = response.setdefault("headers", {})
                if code in (429, 503):
                    headers["Retry-After"] = _header("Retry-After")
                if code == 201:
                    headers["Location"] = _header("Location")
                if _returns_task(response):
                    headers["ETag"] = _header("ETag")
                if not headers:
                    del response["headers"]
    used = {
        tag
        for operations in result.get("paths", {}).values()
        for op in operations.values()
        if isinstance(op, dict)
        for tag in op.get("tags", [])
    }
    known = [tag for tag in TAGS if tag["name"] in used]
    result["tags"] = known + [{"name": name, "description": name} for name in sorted(used - {t["name"] for t in TAGS})]
    return result
