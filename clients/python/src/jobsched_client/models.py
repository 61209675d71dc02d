"""Typed models of every resource the API returns, and the task input it takes.

Each model names the OpenAPI component it mirrors (`SCHEMA`); the SDK's tests
compare their fields with the live `/v1/schema`, so a field added or renamed on
the server fails CI here. Fields the server does not have yet are listed in
`PENDING_FIELDS` (none today; see capabilities.py). Unknown keys in an answer are ignored,
so a newer server never breaks an older SDK.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")


def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return _decode(inner, value)
    if origin is list:
        (inner,) = typing.get_args(tp)
        return [_decode(inner, item) for item in value]
    if tp is datetime:
        return datetime.fromisoformat(value)
    if dataclasses.is_dataclass(tp):
        return from_json(typing.cast(type, tp), value)
    return value


def from_json(cls: type[T], data: dict[str, Any]) -> T:
    """Build model `cls` from its JSON object (nested models, lists and timestamps decoded)."""
    hints = typing.get_type_hints(cls)
    kwargs = {f.name: _decode(hints[f.name], data[f.name]) for f in dataclasses.fields(cls) if f.name in data}  # type: ignore[arg-type]  # cls is a dataclass type
    return cls(**kwargs)


def to_json(value: Any) -> Any:
    """A model (or list/dict of them) as plain JSON data: timestamps as ISO 8601 text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return value


def etag(version: int) -> str:
    """A task's ETag: its version, quoted."""
    return f'"{version}"'


# --- tasks -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """One of `cron` (with `timezone`, default UTC), `every` (e.g. "90m", from `anchor`) or `run_at` (a one-shot).

    `window_seconds` spreads each run's call over that many seconds after its nominal time;
    `starts_at`, `ends_at` and `max_runs` bound a cron or every schedule (then the task is completed).
    """

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskSchedule", "ScheduleInput")

    cron: str | None = None
    timezone: str | None = None
    run_at: datetime | None = None
    # Names of the tenant's calendars whose local dates the runs skip (absent when there are none).
    exclude_calendars: list[str] | None = None
    every: str | None = None
    anchor: datetime | None = None
    window_seconds: int | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    max_runs: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in to_json(self).items() if value is not None}


@dataclass(frozen=True)
class HttpCall:
    """The request a task sends."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("HttpOutput", "HttpInput")

    url: str
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""


@dataclass(frozen=True)
class LastRun:
    SCHEMA: ClassVar[tuple[str, ...]] = ("LastRunOutput",)

    job_id: str
    scheduled_at: datetime
    status: str
    http_status: int | None
    at: datetime


@dataclass(frozen=True)
class Task:
    """A task as read; `etag` is what an edit sends back as If-Match."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskOutput",)

    id: str
    name: str
    status: str
    version: int
    schedule: Schedule
    http: HttpCall
    timeout_seconds: int
    max_attempts: int
    backoff_base_seconds: int
    priority: int
    secret_ref: str | None
    missed_runs: str
    auto_pause_after: int | None
    paused_reason: str | None
    consecutive_failures: int
    last_run: LastRun | None
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    labels: dict[str, str] = field(default_factory=dict)
    overlap: str = "allow"  # allow | skip | buffer_one | replace
    delete_after_completion: bool = False
    runs_scheduled: int | None = None  # toward max_runs/ends_at; status "completed" once past them

    @property
    def etag(self) -> str:
        return etag(self.version)


@dataclass(frozen=True)
class TaskSpec:
    """A task to create: what `POST /v1/tasks` takes. None leaves a field to the server's default."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskInput",)

    name: str
    schedule: Schedule
    http: HttpCall
    timeout_seconds: int | None = None
    max_attempts: int | None = None
    backoff_base_seconds: int | None = None
    priority: int | None = None
    secret_ref: str | None = None
    missed_runs: str | None = None
    auto_pause_after: int | None = None
    labels: dict[str, str] | None = None
    overlap: str | None = None
    delete_after_completion: bool | None = None

    def to_json(self) -> dict[str, Any]:
        body = {key: value for key, value in to_json(self).items() if value is not None}
        body["schedule"] = self.schedule.to_json()
        return body


@dataclass(frozen=True)
class ImportLine:
    """What an import does (or, in a dry run, would do) with one line: `fields` an update changes."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskImportLine",)

    line: int
    name: str
    action: str
    id: str | None
    fields: list[str]


@dataclass(frozen=True)
class ImportResult:
    """The answer of `POST /v1/tasks/import`: counts, and each line's action (upserted by name)."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskImportResult",)

    dry_run: bool
    created: int
    updated: int
    unchanged: int
    lines: list[ImportLine]

    @property
    def has_changes(self) -> bool:
        return self.created + self.updated > 0


# --- jobs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobRequest:
    SCHEMA: ClassVar[tuple[str, ...]] = ("JobRequestOutput",)

    method: str
    url: str


@dataclass(frozen=True)
class Attempt:
    SCHEMA: ClassVar[tuple[str, ...]] = ("AttemptOutput",)

    attempt: int
    started_at: datetime | None
    finished_at: datetime
    duration_ms: int | None
    status: str
    http_status: int | None
    error: str | None


@dataclass(frozen=True)
class Job:
    """One run of a task, from the queue (`archived` false) or the history."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("JobOutput",)

    id: str
    task_id: str
    scheduled_at: datetime
    status: str
    attempt: int
    max_attempts: int
    priority: int
    next_attempt_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    http_status: int | None
    error: str | None
    response_body: str | None
    request: JobRequest
    attempts: list[Attempt]
    archived: bool
    labels: dict[str, str] = field(default_factory=dict)  # the task's labels when the job was made


@dataclass(frozen=True)
class DryRunRequest:
    SCHEMA: ClassVar[tuple[str, ...]] = ("DryRunRequestOutput",)

    method: str
    url: str
    headers: dict[str, str]
    body: str


@dataclass(frozen=True)
class DryRunEgress:
    SCHEMA: ClassVar[tuple[str, ...]] = ("DryRunEgressOutput",)

    verdict: str
    detail: str


@dataclass(frozen=True)
class DryRun:
    """The request a run would send now (credential masked); nothing is sent."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("DryRunOutput",)

    request: DryRunRequest
    egress: DryRunEgress
    signed: bool
    secret_found: bool | None
    sent: bool


# --- previews --------------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewRun:
    SCHEMA: ClassVar[tuple[str, ...]] = ("PreviewRunOutput",)

    at: datetime
    local: str
    utc_offset: str
    dst: bool
    offset_changed_from: str | None
    ambiguous_local_time: bool
    late: bool
    excluded_by: str | None = None  # the calendar that makes this run skipped
    call_at: datetime | None = None  # `at` plus the task's window offset (None: an unsaved windowed schedule)


@dataclass(frozen=True)
class Preview:
    SCHEMA: ClassVar[tuple[str, ...]] = ("PreviewOutput",)

    timezone: str | None
    behind: bool
    runs: list[PreviewRun]


# --- secrets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Secret:
    """A stored secret's name and times; its value is write-only."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("SecretOutput",)

    name: str
    version: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SigningSecret:
    SCHEMA: ClassVar[tuple[str, ...]] = ("SigningSecretOutput",)

    id: str
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True)
class SigningSecretCreated:
    """A new signing secret: `secret` (whsec_...) is shown this once."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("SigningSecretCreated",)

    id: str
    created_at: datetime
    expires_at: datetime | None
    secret: str = field(repr=False)


# --- rate limits -----------------------------------------------------------------------


@dataclass(frozen=True)
class RateLimit:
    """A tenant's rate limit for one origin (scheme://host:port), kept by every executor."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("RateLimitOutput",)

    id: str
    origin: str
    per_second: float
    burst: int
    created_at: datetime
    updated_at: datetime


# --- notifications ---------------------------------------------------------------------


@dataclass(frozen=True)
class Notification:
    """The tenant's notification subscription: where to send which events."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("NotificationOutput",)

    url: str
    events: list[str]
    failing_after: int
    enabled: bool
    created_at: datetime
    updated_at: datetime


# --- the audit trail -------------------------------------------------------------------


@dataclass(frozen=True)
class TaskChangeField:
    """One changed field: its API name (`http.url`, `labels.env`), old and new (credentials masked, long ones cut)."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskChangeFieldOutput",)

    field: str
    old: Any
    new: Any
    masked: bool
    truncated: bool


@dataclass(frozen=True)
class TaskChange:
    """One change of a task: what (`action`), by whom (`actor`), when, and the fields it changed."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("TaskChangeOutput",)

    id: str
    task_id: str
    action: str
    actor: str
    at: datetime
    version: int | None
    changes: list[TaskChangeField]


@dataclass(frozen=True)
class NotificationDelivery:
    """One notification sent (or being sent): its event and how its call went."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("DeliveryOutput",)

    event_id: str
    event_type: str | None
    task_id: str | None
    status: str
    attempts: int
    http_status: int | None
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    next_attempt_at: datetime | None


# --- calendars and backfill ------------------------------------------------------------


@dataclass(frozen=True)
class CalendarSpec:
    """A calendar to put: local `dates` (YYYY-MM-DD) and inclusive `ranges` ({"from", "to"}) in `timezone`."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("CalendarInput",)

    timezone: str
    dates: list[str] = field(default_factory=list)
    ranges: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return to_json(self)


@dataclass(frozen=True)
class Calendar:
    """A tenant's calendar as read; `etag` guards a replace or a delete (If-Match)."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("CalendarOutput",)

    name: str
    timezone: str
    dates: list[str]
    ranges: list[dict[str, str]]
    version: int
    created_at: datetime
    updated_at: datetime

    @property
    def etag(self) -> str:
        return etag(self.version)


@dataclass(frozen=True)
class BackfillResult:
    """What a backfill did: pending jobs `created`, runs `existing` already, runs `excluded` (made skipped)."""

    SCHEMA: ClassVar[tuple[str, ...]] = ("BackfillOutput",)

    created: int
    existing: int
    excluded: int


# --- pages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a cursor-paged list; `next_cursor` is None on the last."""

    results: list[T]
    next_cursor: str | None


MODELS: tuple[type, ...] = (
    Schedule,
    HttpCall,
    LastRun,
    Task,
    TaskSpec,
    ImportLine,
    ImportResult,
    JobRequest,
    Attempt,
    Job,
    DryRunRequest,
    DryRunEgress,
    DryRun,
    PreviewRun,
    Preview,
    Secret,
    SigningSecret,
    SigningSecretCreated,
    RateLimit,
    TaskChangeField,
    TaskChange,
    Notification,
    NotificationDelivery,
    CalendarSpec,
    Calendar,
    BackfillResult,
)
