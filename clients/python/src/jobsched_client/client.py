"""The synchronous client: `Client(url, token)` with `tasks`, `jobs`, `schedules`, `secrets`, `signing_secrets`,
`rate_limits`, `notifications`.

with Client("https://jobsched.example.com", token) as api:
    for task in api.tasks.list():
        print(task.name, task.next_run_at)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, TypeVar

import httpx

from jobsched_client import operations as ops
from jobsched_client.capabilities import Capabilities
from jobsched_client.errors import TransportError, Unsupported, error_for
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
)
from jobsched_client.pagination import iterate_pages
from jobsched_client.retry import RETRIED_STATUSES, RetryPolicy
from jobsched_client.version import USER_AGENT

logger = logging.getLogger(__name__)
T = TypeVar("T")


def client_headers(token: str | None) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json, application/problem+json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class Client:
    """A tenant's connection to the API; one httpx.Client, closed by `close()` or the `with` block."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=client_headers(token), timeout=timeout, transport=transport
        )
        self._retry = retry or RetryPolicy()
        self._capabilities: Capabilities | None = None
        self.tasks = Tasks(self)
        self.jobs = Jobs(self)
        self.schedules = Schedules(self)
        self.secrets = Secrets(self)
        self.calendars = Calendars(self)
        self.signing_secrets = SigningSecrets(self)
        self.rate_limits = RateLimits(self)
        self.notifications = Notifications(self)

    def _exchange(self, call: ops.Call[Any], *, stream: bool = False) -> httpx.Response:
        """Send one call; retry 429/503 as the policy says; raise the typed error for any other failure."""
        attempt = 1
        while True:
            request = self._http.build_request(
                call.method, call.path, params=call.params, headers=call.headers, json=call.json, content=call.content
            )
            try:
                response = self._http.send(request, stream=stream)
                if response.is_success:
                    return response
                if stream:  # an error answer is a small problem+json: read it whole
                    try:
                        response.read()
                    finally:
                        response.close()
            except httpx.TransportError as exc:
                raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            if response.status_code in RETRIED_STATUSES and attempt < self._retry.attempts:
                delay = self._retry.delay(retry_after=response.headers.get("Retry-After"), attempt=attempt)
                logger.info(
                    "retrying",
                    extra={
                        "event": "retry",
                        "operation": call.operation_id,
                        "status": response.status_code,
                        "delay": delay,
                    },
                )
                time.sleep(delay)
                attempt += 1
                continue
            raise error_for(response)

    def send(self, call: ops.Call[T]) -> T:
        """Send one call; retry 429/503 as the policy says; raise the typed error for any other failure."""
        return call.read(self._exchange(call))

    def send_lines(self, call: ops.Call[Any]) -> Iterator[dict[str, Any]]:
        """Send a call answered with JSON lines; yield each line's object as it arrives (the call is sent on the
        first `next()`)."""
        response = self._exchange(call, stream=True)
        try:
            for text in response.iter_lines():
                if (line := ops.json_line(text)) is not None:
                    yield line
        except httpx.TransportError as exc:
            raise TransportError(f"{call.method} {call.path}: {exc}") from exc
        finally:
            response.close()

    def schema(self) -> dict[str, Any]:
        """The live OpenAPI schema (`GET /v1/schema`)."""
        return self.send(ops.schema())

    def capabilities(self) -> Capabilities:
        """What this server supports (read from its schema once per client)."""
        if self._capabilities is None:
            self._capabilities = Capabilities.from_schema(self.schema())
        return self._capabilities

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Resource:
    def __init__(self, client: Client):
        self._client = client
        self._send = client.send


class Tasks(_Resource):
    """`/v1/tasks`: list, read, create, edit (If-Match), delete, pause, resume, preview, run, history, export/import."""

    def list(self, *, limit: int | None = None, label: Mapping[str, str] | None = None) -> Iterator[Task]:
        """Every task, newest first, page by page; `label={"env": "prod"}`: only tasks carrying every one."""
        return iterate_pages(lambda cursor: self.page(cursor=cursor, limit=limit, label=label))

    def page(
        self, *, cursor: str | None = None, limit: int | None = None, label: Mapping[str, str] | None = None
    ) -> Page[Task]:
        if label and not self._client.capabilities().task_label_filter:
            raise Unsupported("this server has no task labels: a label selector would list every task")
        return self._send(ops.tasks_page(cursor=cursor, limit=limit, label=label))

    def export(self) -> Iterator[dict[str, Any]]:
        """Every live task, oldest first, streamed: dicts in the create body's shape plus `id` and `status`.

        Secrets travel by name (`secret_ref`), never their value; `import_` takes these dicts back.
        """
        return self._client.send_lines(ops.tasks_export())

    def import_(self, tasks: Iterable[TaskSpec | Mapping[str, Any]], *, dry_run: bool = False) -> ImportResult:
        """Upsert tasks by name, all or nothing (`id` and `status` in a line are ignored).

        A refused line raises ValidationFailed naming it (`lines[3].schedule.cron`: the 3rd task given) and
        nothing is written; `dry_run=True` answers the plan and writes nothing.
        """
        return self._send(ops.tasks_import(tasks, dry_run=dry_run))

    def get(self, task_id: str) -> Task:
        return self._send(ops.tasks_get(task_id))

    def create(self, spec: TaskSpec | dict[str, Any], *, idempotency_key: str | None = None) -> Task:
        """Create a task; the Idempotency-Key (given, or generated) makes a retry return the same task."""
        return self._send(ops.tasks_create(spec, idempotency_key=idempotency_key))

    def update(self, task: Task | str, changes: dict[str, Any], *, etag: str | None = None) -> Task:
        """Merge-patch `changes` onto the task, If-Match the ETag read (the Task's, or `etag`).

        Raises PreconditionFailed when the task changed since it was read.
        """
        return self._send(ops.tasks_update(task, changes, etag=etag))

    def delete(self, task: Task | str, *, etag: str | None = None) -> None:
        """Delete a task; given a Task (or `etag`), only if it has not changed since."""
        self._send(ops.tasks_delete(task, etag=etag))

    def pause(self, task_id: str) -> Task:
        return self._send(ops.tasks_pause(task_id))

    def resume(self, task_id: str) -> Task:
        return self._send(ops.tasks_resume(task_id))

    def preview(self, task_id: str, *, n: int | None = None) -> Preview:
        """The task's next `n` fire times."""
        return self._send(ops.tasks_preview(task_id, n=n))

    def run(self, task_id: str, *, idempotency_key: str | None = None) -> Job:
        """Run the task now (one extra job); idempotent with the key."""
        return self._send(ops.tasks_run(task_id, idempotency_key=idempotency_key))

    def dry_run(self, task_id: str) -> DryRun:
        return self._send(ops.tasks_dry_run(task_id))

    def backfill(self, task_id: str, *, start: datetime, end: datetime) -> BackfillResult:
        """Create the task's runs with scheduled_at in [start, end) (aware, past); idempotent: a run made is kept."""
        return self._send(ops.tasks_backfill(task_id, start=start, end=end))

    def history(self, task_id: str, *, limit: int | None = None) -> Iterator[Job]:
        """The task's jobs, newest first, from the queue and the history."""
        return iterate_pages(lambda cursor: self.history_page(task_id, cursor=cursor, limit=limit))

    def history_page(self, task_id: str, *, cursor: str | None = None, limit: int | None = None) -> Page[Job]:
        return self._send(ops.tasks_history(task_id, cursor=cursor, limit=limit))

    def changes(self, task_id: str, *, limit: int | None = None) -> Iterator[TaskChange]:
        """The task's audit trail, newest first: who changed what, when (a deleted task's too)."""
        return iterate_pages(lambda cursor: self.changes_page(task_id, cursor=cursor, limit=limit))

    def changes_page(self, task_id: str, *, cursor: str | None = None, limit: int | None = None) -> Page[TaskChange]:
        return self._send(ops.tasks_changes(task_id, cursor=cursor, limit=limit))


class Jobs(_Resource):
    """`/v1/jobs` and the dead-letter queue."""

    def get(self, job_id: str) -> Job:
        return self._send(ops.jobs_get(job_id))

    def retry(self, job_id: str) -> Job:
        """Put a dead job back in the queue."""
        return self._send(ops.jobs_retry(job_id))

    def cancel(self, job_id: str) -> Job:
        """Take a pending job out of the queue."""
        return self._send(ops.jobs_cancel(job_id))

    def dlq(self, *, task_id: str | None = None, limit: int | None = None) -> Iterator[Job]:
        """The tenant's dead jobs (optionally one task's), newest first."""
        return iterate_pages(lambda cursor: self.dlq_page(task_id=task_id, cursor=cursor, limit=limit))

    def dlq_page(self, *, task_id: str | None = None, cursor: str | None = None, limit: int | None = None) -> Page[Job]:
        return self._send(ops.dlq_page(task_id=task_id, cursor=cursor, limit=limit))


class Schedules(_Resource):
    def preview(self, schedule: Schedule, *, n: int | None = None) -> Preview:
        """An unsaved schedule's next `n` fire times."""
        return self._send(ops.schedules_preview(schedule, n=n))


class Secrets(_Resource):
    """`/v1/secrets`: values are write-only."""

    def list(self) -> list[Secret]:
        return self._send(ops.secrets_list())

    def get(self, name: str) -> Secret:
        return self._send(ops.secrets_get(name))

    def put(self, name: str, value: str) -> Secret:
        """Create or replace a secret; tasks naming it in secret_ref send it as Authorization."""
        return self._send(ops.secrets_put(name, value))

    def delete(self, name: str) -> None:
        self._send(ops.secrets_delete(name))


class Calendars(_Resource):
    """`/v1/calendars`: named sets of local dates a task's runs skip (schedule.exclude_calendars)."""

    def list(self, *, limit: int | None = None) -> Iterator[Calendar]:
        return iterate_pages(lambda cursor: self.page(cursor=cursor, limit=limit))

    def page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[Calendar]:
        return self._send(ops.calendars_page(cursor=cursor, limit=limit))

    def get(self, name: str) -> Calendar:
        return self._send(ops.calendars_get(name))

    def put(self, name: str, spec: CalendarSpec | dict[str, Any], *, etag: str | None = None) -> Calendar:
        """Create or replace the calendar; with `etag`, only if it is still that version."""
        return self._send(ops.calendars_put(name, spec, etag=etag))

    def delete(self, calendar: Calendar | str, *, etag: str | None = None) -> None:
        """Delete it (refused with Conflict while a task excludes it)."""
        self._send(ops.calendars_delete(calendar, etag=etag))


class SigningSecrets(_Resource):
    """`/v1/signing-secrets`: the keys that sign calls (Standard Webhooks)."""

    def list(self) -> list[SigningSecret]:
        return self._send(ops.signing_secrets_list())

    def create(self, *, previous_expires_in_seconds: int | None = None) -> SigningSecretCreated:
        """A new signing secret (its value shown this once); the current one keeps signing for the given time."""
        return self._send(ops.signing_secrets_create(previous_expires_in_seconds=previous_expires_in_seconds))

    def get(self, secret_id: str) -> SigningSecret:
        return self._send(ops.signing_secrets_get(secret_id))

    def delete(self, secret_id: str) -> None:
        self._send(ops.signing_secrets_delete(secret_id))


class RateLimits(_Resource):
    """`/v1/rate-limits`: calls per second to an origin, kept by every executor."""

    def list(self, *, limit: int | None = None) -> Iterator[RateLimit]:
        """Every limit, newest first, page by page."""
        return iterate_pages(lambda cursor: self.page(cursor=cursor, limit=limit))

    def page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[RateLimit]:
        return self._send(ops.rate_limits_page(cursor=cursor, limit=limit))

    def set(self, origin: str, *, per_second: float, burst: int) -> RateLimit:
        """Create or replace the limit for `origin` (scheme://host[:port])."""
        return self._send(ops.rate_limits_set(origin=origin, per_second=per_second, burst=burst))

    def get(self, limit_id: str) -> RateLimit:
        return self._send(ops.rate_limits_get(limit_id))

    def delete(self, limit_id: str) -> None:
        self._send(ops.rate_limits_delete(limit_id))


class Notifications(_Resource):
    """`/v1/notifications`: the tenant's one subscription to events (job.dead, task.failing, ...) and its deliveries."""

    def get(self) -> Notification:
        return self._send(ops.notifications_get())

    def put(
        self, *, url: str, events: Iterable[str], failing_after: int | None = None, enabled: bool | None = None
    ) -> Notification:
        """Create or replace the subscription (omitted fields take the server's defaults)."""
        return self._send(ops.notifications_put(url=url, events=events, failing_after=failing_after, enabled=enabled))

    def delete(self) -> None:
        self._send(ops.notifications_delete())

    def deliveries(self, *, limit: int | None = None) -> Iterator[NotificationDelivery]:
        """The notifications sent or being sent, newest first."""
        return iterate_pages(lambda cursor: self.deliveries_page(cursor=cursor, limit=limit))

    def deliveries_page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[NotificationDelivery]:
        return self._send(ops.notifications_deliveries_page(cursor=cursor, limit=limit))
