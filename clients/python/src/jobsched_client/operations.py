"""Every API operation the SDK calls, written once for the sync and the async client.

An operation builds a `Call`: method, path, query, headers, body, and how to
read the answer. The clients only send calls (with retries and typed errors).
`ENDPOINTS` is the one table of operation ids to routes; the drift test checks
it against the live schema in both directions.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from jobsched_client.models import (
    BackfillResult,
    Calendar,
    CalendarSpec,
    DryRun,
    ImportResult,
    Job,
    Notification,
    NotificationDelivery,
    Page,
    Preview,
    RateLimit,
    Schedule,
    Secret,
    SigningSecret,
    SigningSecretCreated,
    Task,
    TaskChange,
    TaskSpec,
    from_json,
    to_json,
)

T = TypeVar("T")

ENDPOINTS: dict[str, tuple[str, str]] = {
    "tasks_list": ("GET", "/v1/tasks"),
    "tasks_create": ("POST", "/v1/tasks"),
    "tasks_export": ("GET", "/v1/tasks/export"),
    "tasks_import": ("POST", "/v1/tasks/import"),
    "tasks_get": ("GET", "/v1/tasks/{task_id}"),
    "tasks_update": ("PATCH", "/v1/tasks/{task_id}"),
    "tasks_delete": ("DELETE", "/v1/tasks/{task_id}"),
    "tasks_pause": ("POST", "/v1/tasks/{task_id}/pause"),
    "tasks_resume": ("POST", "/v1/tasks/{task_id}/resume"),
    "tasks_preview": ("GET", "/v1/tasks/{task_id}/preview"),
    "tasks_run": ("POST", "/v1/tasks/{task_id}/run"),
    "tasks_dry_run": ("POST", "/v1/tasks/{task_id}/dry-run"),
    "tasks_history": ("GET", "/v1/tasks/{task_id}/history"),
    "tasks_changes": ("GET", "/v1/tasks/{task_id}/changes"),
    "tasks_backfill": ("POST", "/v1/tasks/{task_id}/backfill"),
    "schedules_preview": ("POST", "/v1/schedules/preview"),
    "jobs_get": ("GET", "/v1/jobs/{job_id}"),
    "jobs_retry": ("POST", "/v1/jobs/{job_id}/retry"),
    "jobs_cancel": ("POST", "/v1/jobs/{job_id}/cancel"),
    "dlq_list": ("GET", "/v1/dlq"),
    "secrets_list": ("GET", "/v1/secrets"),
    "secrets_get": ("GET", "/v1/secrets/{name}"),
    "secrets_put": ("PUT", "/v1/secrets/{name}"),
    "secrets_delete": ("DELETE", "/v1/secrets/{name}"),
    "calendars_list": ("GET", "/v1/calendars"),
    "calendars_get": ("GET", "/v1/calendars/{name}"),
    "calendars_put": ("PUT", "/v1/calendars/{name}"),
    "calendars_delete": ("DELETE", "/v1/calendars/{name}"),
    "signing_secrets_list": ("GET", "/v1/signing-secrets"),
    "signing_secrets_create": ("POST", "/v1/signing-secrets"),
    "signing_secrets_get": ("GET", "/v1/signing-secrets/{secret_id}"),
    "signing_secrets_delete": ("DELETE", "/v1/signing-secrets/{secret_id}"),
    "rate_limits_list": ("GET", "/v1/rate-limits"),
    "rate_limits_set": ("POST", "/v1/rate-limits"),
    "rate_limits_get": ("GET", "/v1/rate-limits/{limit_id}"),
    "rate_limits_delete": ("DELETE", "/v1/rate-limits/{limit_id}"),
    "notifications_get": ("GET", "/v1/notifications"),
    "notifications_put": ("PUT", "/v1/notifications"),
    "notifications_delete": ("DELETE", "/v1/notifications"),
    "notifications_deliveries": ("GET", "/v1/notifications/deliveries"),
}
SCHEMA_PATH = "/v1/schema"
MERGE_PATCH = "application/merge-patch+json"
JSON_LINES = "application/x-ndjson"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP exchange: what to send and how to read a success."""

    operation_id: str
    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None  # a body that is not one JSON document (JSON lines)


def _call(
    operation_id: str, read: Callable[[httpx.Response], T], /, *, path_args: dict[str, str] | None = None, **kw: Any
) -> Call[T]:
    method, template = ENDPOINTS[operation_id]
    path = template.format(**{k: quote(str(v), safe="") for k, v in (path_args or {}).items()})
    params = {k: v for k, v in kw.pop("params", {}).items() if v is not None}
    return Call(operation_id, method, path, read, params=params, **kw)


def _model(cls: type[T]) -> Callable[[httpx.Response], T]:
    return lambda response: from_json(cls, response.json())


def _page(cls: type[T]) -> Callable[[httpx.Response], Page[T]]:
    def read(response: httpx.Response) -> Page[T]:
        body = response.json()
        return Page([from_json(cls, item) for item in body["results"]], body.get("next_cursor"))

    return read


def _results(cls: type[T]) -> Callable[[httpx.Response], list[T]]:
    return lambda response: [from_json(cls, item) for item in response.json()["results"]]


def _nothing(response: httpx.Response) -> None:
    return None


def json_line(text: str) -> dict[str, Any] | None:
    """One line of a JSON-lines answer as its object; None for a blank line."""
    return json.loads(text) if text.strip() else None


def _json_lines(response: httpx.Response) -> list[dict[str, Any]]:
    return [line for text in response.text.splitlines() if (line := json_line(text)) is not None]


def label_selectors(label: Mapping[str, str] | None) -> list[str] | None:
    """{"env": "prod", "team": "ops"} -> ["env=prod", "team=ops"]: sent as repeated `label=`, all must hold."""
    return [f"{key}={value}" for key, value in label.items()] if label else None


def _task_id(task: Task | str) -> str:
    return task.id if isinstance(task, Task) else str(task)


def _if_match(task: Task | str, etag: str | None) -> str | None:
    return etag if etag is not None else (task.etag if isinstance(task, Task) else None)


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


# --- tasks -----------------------------------------------------------------------------


def tasks_page(*, cursor: str | None, limit: int | None, label: Mapping[str, str] | None = None) -> Call[Page[Task]]:
    params = {"cursor": cursor, "limit": limit, "label": label_selectors(label)}
    return _call("tasks_list", _page(Task), params=params)


def tasks_create(spec: TaskSpec | dict[str, Any], *, idempotency_key: str | None) -> Call[Task]:
    body = spec.to_json() if isinstance(spec, TaskSpec) else spec
    key = idempotency_key or new_idempotency_key()  # fixed for this call, so a retry replays
    return _call("tasks_create", _model(Task), json=body, headers={"Idempotency-Key": key})


def tasks_export() -> Call[list[dict[str, Any]]]:
    """Every live task as a JSON-lines record (read whole here; the clients' `export()` streams it)."""
    return _call("tasks_export", _json_lines)


def import_line(task: TaskSpec | Mapping[str, Any]) -> bytes:
    body = task.to_json() if isinstance(task, TaskSpec) else dict(task)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def tasks_import(tasks: Iterable[TaskSpec | Mapping[str, Any]], *, dry_run: bool) -> Call[ImportResult]:
    # One task a line, no blank lines: the server's `lines[N]` is then the Nth task given.
    content = b"".join(import_line(task) for task in tasks)
    params = {"dry_run": "true" if dry_run else None}
    headers = {"Content-Type": JSON_LINES}
    return _call("tasks_import", _model(ImportResult), params=params, headers=headers, content=content)


def tasks_get(task_id: str) -> Call[Task]:
    return _call("tasks_get", _model(Task), path_args={"task_id": task_id})


def tasks_update(task: Task | str, changes: dict[str, Any], *, etag: str | None) -> Call[Task]:
    if_match = _if_match(task, etag)
    if if_match is None:
        raise ValueError("an edit needs the ETag read: pass the Task you read, or etag=")
    headers = {"If-Match": if_match, "Content-Type": MERGE_PATCH}
    return _call("tasks_update", _model(Task), path_args={"task_id": _task_id(task)}, json=changes, headers=headers)


def tasks_delete(task: Task | str, *, etag: str | None) -> Call[None]:
    if_match = _if_match(task, etag)
    headers = {"If-Match": if_match} if if_match is not None else {}
    return _call("tasks_delete", _nothing, path_args={"task_id": _task_id(task)}, headers=headers)


def tasks_pause(task_id: str) -> Call[Task]:
    return _call("tasks_pause", _model(Task), path_args={"task_id": task_id})


def tasks_resume(task_id: str) -> Call[Task]:
    return _call("tasks_resume", _model(Task), path_args={"task_id": task_id})


def tasks_preview(task_id: str, *, n: int | None) -> Call[Preview]:
    return _call("tasks_preview", _model(Preview), path_args={"task_id": task_id}, params={"n": n})


def tasks_run(task_id: str, *, idempotency_key: str | None) -> Call[Job]:
    key = idempotency_key or new_idempotency_key()
    return _call("tasks_run", _model(Job), path_args={"task_id": task_id}, headers={"Idempotency-Key": key})


def tasks_dry_run(task_id: str) -> Call[DryRun]:
    return _call("tasks_dry_run", _model(DryRun), path_args={"task_id": task_id})


def tasks_history(task_id: str, *, cursor: str | None, limit: int | None) -> Call[Page[Job]]:
    params = {"cursor": cursor, "limit": limit}
    return _call("tasks_history", _page(Job), path_args={"task_id": task_id}, params=params)


def tasks_changes(task_id: str, *, cursor: str | None, limit: int | None) -> Call[Page[TaskChange]]:
    params = {"cursor": cursor, "limit": limit}
    return _call("tasks_changes", _page(TaskChange), path_args={"task_id": task_id}, params=params)


def tasks_backfill(task_id: str, *, start: datetime, end: datetime) -> Call[BackfillResult]:
    body = {"from": to_json(start), "to": to_json(end)}
    return _call("tasks_backfill", _model(BackfillResult), path_args={"task_id": task_id}, json=body)


def schedules_preview(schedule: Schedule, *, n: int | None) -> Call[Preview]:
    return _call("schedules_preview", _model(Preview), json=schedule.to_json(), params={"n": n})


# --- jobs ------------------------------------------------------------------------------


def jobs_get(job_id: str) -> Call[Job]:
    return _call("jobs_get", _model(Job), path_args={"job_id": job_id})


def jobs_retry(job_id: str) -> Call[Job]:
    return _call("jobs_retry", _model(Job), path_args={"job_id": job_id})


def jobs_cancel(job_id: str) -> Call[Job]:
    return _call("jobs_cancel", _model(Job), path_args={"job_id": job_id})


def dlq_page(*, task_id: str | None, cursor: str | None, limit: int | None) -> Call[Page[Job]]:
    return _call("dlq_list", _page(Job), params={"task": task_id, "cursor": cursor, "limit": limit})


# --- secrets and signing secrets -------------------------------------------------------


def secrets_list() -> Call[list[Secret]]:
    return _call("secrets_list", _results(Secret))


def secrets_get(name: str) -> Call[Secret]:
    return _call("secrets_get", _model(Secret), path_args={"name": name})


def secrets_put(name: str, value: str) -> Call[Secret]:
    return _call("secrets_put", _model(Secret), path_args={"name": name}, json={"value": value})


def secrets_delete(name: str) -> Call[None]:
    return _call("secrets_delete", _nothing, path_args={"name": name})


def calendars_page(*, cursor: str | None, limit: int | None) -> Call[Page[Calendar]]:
    return _call("calendars_list", _page(Calendar), params={"cursor": cursor, "limit": limit})


def calendars_get(name: str) -> Call[Calendar]:
    return _call("calendars_get", _model(Calendar), path_args={"name": name})


def calendars_put(name: str, spec: CalendarSpec | dict[str, Any], *, etag: str | None) -> Call[Calendar]:
    body = spec.to_json() if isinstance(spec, CalendarSpec) else spec
    headers = {"If-Match": etag} if etag is not None else {}
    return _call("calendars_put", _model(Calendar), path_args={"name": name}, json=body, headers=headers)


def calendars_delete(calendar: Calendar | str, *, etag: str | None) -> Call[None]:
    if_match = etag if etag is not None else (calendar.etag if isinstance(calendar, Calendar) else None)
    name = calendar.name if isinstance(calendar, Calendar) else calendar
    headers = {"If-Match": if_match} if if_match is not None else {}
    return _call("calendars_delete", _nothing, path_args={"name": name}, headers=headers)


def signing_secrets_list() -> Call[list[SigningSecret]]:
    return _call("signing_secrets_list", _results(SigningSecret))


def signing_secrets_create(*, previous_expires_in_seconds: int | None) -> Call[SigningSecretCreated]:
    body = {} if previous_expires_in_seconds is None else {"previous_expires_in_seconds": previous_expires_in_seconds}
    return _call("signing_secrets_create", _model(SigningSecretCreated), json=body)


def signing_secrets_get(secret_id: str) -> Call[SigningSecret]:
    return _call("signing_secrets_get", _model(SigningSecret), path_args={"secret_id": secret_id})


def signing_secrets_delete(secret_id: str) -> Call[None]:
    return _call("signing_secrets_delete", _nothing, path_args={"secret_id": secret_id})


# --- notifications ---------------------------------------------------------------------


def notifications_get() -> Call[Notification]:
    return _call("notifications_get", _model(Notification))


def notifications_put(
    *, url: str, events: Iterable[str], failing_after: int | None, enabled: bool | None
) -> Call[Notification]:
    body: dict[str, Any] = {"url": url, "events": list(events)}
    if failing_after is not None:
        body["failing_after"] = failing_after
    if enabled is not None:
        body["enabled"] = enabled
    return _call("notifications_put", _model(Notification), json=body)


def notifications_delete() -> Call[None]:
    return _call("notifications_delete", _nothing)


def notifications_deliveries_page(*, cursor: str | None, limit: int | None) -> Call[Page[NotificationDelivery]]:
    return _call("notifications_deliveries", _page(NotificationDelivery), params={"cursor": cursor, "limit": limit})


def schema() -> Call[dict[str, Any]]:
    return Call("schema", "GET", SCHEMA_PATH, lambda response: response.json(), headers={"Accept": "application/json"})


# --- rate limits ---------------------------------------------------------------------------


def rate_limits_page(*, cursor: str | None, limit: int | None) -> Call[Page[RateLimit]]:
    return _call("rate_limits_list", _page(RateLimit), params={"cursor": cursor, "limit": limit})


def rate_limits_set(*, origin: str, per_second: float, burst: int) -> Call[RateLimit]:
    """Create or replace the limit for `origin` (201 or 200: the same model either way)."""
    body = {"origin": origin, "per_second": per_second, "burst": burst}
    return _call("rate_limits_set", _model(RateLimit), json=body)


def rate_limits_get(limit_id: str) -> Call[RateLimit]:
    return _call("rate_limits_get", _model(RateLimit), path_args={"limit_id": limit_id})


def rate_limits_delete(limit_id: str) -> Call[None]:
    return _call("rate_limits_delete", _nothing, path_args={"limit_id": limit_id})
