"""The asyncio client: `AsyncClient`, the same resources as `Client`, each call awaited.

    async with AsyncClient("https://jobsched.example.com", token) as api:
        async for task in api.tasks.list():
            ...

The operations (operations.py), retries (retry.py) and errors (errors.py) are
shared with the sync client; only the sending differs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import httpx

from jobsched_client import operations as ops
from jobsched_client.capabilities import Capabilities
from jobsched_client.client import client_headers
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
from jobsched_client.pagination import aiterate_pages
from jobsched_client.retry import RETRIED_STATUSES, RetryPolicy

logger = logging.getLogger(__name__)
T = TypeVar("T")


class AsyncClient:
    """A tenant's asyncio connection to the API; one httpx.AsyncClient, closed by `aclose()` or `async with`."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=client_headers(token), timeout=timeout, transport=transport
        )
        self._retry = retry or RetryPolicy()
        self._capabilities: Capabilities | None = None
        self.tasks = AsyncTasks(self)
        self.jobs = AsyncJobs(self)
        self.schedules = AsyncSchedules(self)
        self.secrets = AsyncSecrets(self)
        self.calendars = AsyncCalendars(self)
        self.signing_secrets = AsyncSigningSecrets(self)
        self.rate_limits = AsyncRateLimits(self)
        self.notifications = AsyncNotifications(self)

    async def _exchange(self, call: ops.Call[Any], *, stream: bool = False) -> httpx.Response:
        """Send one call; retry 429/503 as the policy says; raise the typed error for any other failure."""
        attempt = 1
        while True:
            request = self._http.build_request(
                call.method, call.path, params=call.params, headers=call.headers, json=call.json, content=call.content
            )
            try:
                response = await self._http.send(request, stream=stream)
                if response.is_success:
                    return response
                if stream:  # an error answer is a small problem+json: read it whole
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
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
                await asyncio.sleep(delay)
                attempt += 1
                continue
            raise error_for(response)

    async def send(self, call: ops.Call[T]) -> T:
        """Send one call; retry 429/503 as the policy says; raise the typed error for any other failure."""
        return call.read(await self._exchange(call))

    async def send_lines(self, call: ops.Call[Any]) -> AsyncIterator[dict[str, Any]]:
        """The async twin of `Client.send_lines`."""
        response = await self._exchange(call, stream=True)
        try:
            async for text in response.aiter_lines():
                if (line := ops.json_line(text)) is not None:
                    yield line
        except httpx.TransportError as exc:
            raise TransportError(f"{call.method} {call.path}: {exc}") from exc
        finally:
            await response.aclose()

    async def schema(self) -> dict[str, Any]:
        return await self.send(ops.schema())

    async def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            self._capabilities = Capabilities.from_schema(await self.schema())
        return self._capabilities

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _AsyncResource:
    def __init__(self, client: AsyncClient):
        self._client = client
        self._send = client.send


class AsyncTasks(_AsyncResource):
    """The async twin of `Tasks`."""

    def list(self, *, limit: int | None = None, label: Mapping[str, str] | None = None) -> AsyncIterator[Task]:
        return aiterate_pages(lambda cursor: self.page(cursor=cursor, limit=limit, label=label))

    async def page(
        self, *, cursor: str | None = None, limit: int | None = None, label: Mapping[str, str] | None = None
    ) -> Page[Task]:
        if label and not (await self._client.capabilities()).task_label_filter:
            raise Unsupported("this server has no task labels: a label selector would list every task")
        return await self._send(ops.tasks_page(cursor=cursor, limit=limit, label=label))

    def export(self) -> AsyncIterator[dict[str, Any]]:
        return self._client.send_lines(ops.tasks_export())

    async def import_(self, tasks: Iterable[TaskSpec | Mapping[str, Any]], *, dry_run: bool = False) -> ImportResult:
        return await self._send(ops.tasks_import(tasks, dry_run=dry_run))

    async def get(self, task_id: str) -> Task:
        return await self._send(ops.tasks_get(task_id))

    async def create(self, spec: TaskSpec | dict[str, Any], *, idempotency_key: str | None = None) -> Task:
        return await self._send(ops.tasks_create(spec, idempotency_key=idempotency_key))

    async def update(self, task: Task | str, changes: dict[str, Any], *, etag: str | None = None) -> Task:
        return await self._send(ops.tasks_update(task, changes, etag=etag))

    async def delete(self, task: Task | str, *, etag: str | None = None) -> None:
        await self._send(ops.tasks_delete(task, etag=etag))

    async def pause(self, task_id: str) -> Task:
        return await self._send(ops.tasks_pause(task_id))

    async def resume(self, task_id: str) -> Task:
        return await self._send(ops.tasks_resume(task_id))

    async def preview(self, task_id: str, *, n: int | None = None) -> Preview:
        return await self._send(ops.tasks_preview(task_id, n=n))

    async def run(self, task_id: str, *, idempotency_key: str | None = None) -> Job:
        return await self._send(ops.tasks_run(task_id, idempotency_key=idempotency_key))

    async def dry_run(self, task_id: str) -> DryRun:
        return await self._send(ops.tasks_dry_run(task_id))

    async def backfill(self, task_id: str, *, start: datetime, end: datetime) -> BackfillResult:
        return await self._send(ops.tasks_backfill(task_id, start=start, end=end))

    def history(self, task_id: str, *, limit: int | None = None) -> AsyncIterator[Job]:
        return aiterate_pages(lambda cursor: self.history_page(task_id, cursor=cursor, limit=limit))

    async def history_page(self, task_id: str, *, cursor: str | None = None, limit: int | None = None) -> Page[Job]:
        return await self._send(ops.tasks_history(task_id, cursor=cursor, limit=limit))

    def changes(self, task_id: str, *, limit: int | None = None) -> AsyncIterator[TaskChange]:
        """The task's audit trail, newest first (a deleted task's too)."""
        return aiterate_pages(lambda cursor: self.changes_page(task_id, cursor=cursor, limit=limit))

    async def changes_page(
        self, task_id: str, *, cursor: str | None = None, limit: int | None = None
    ) -> Page[TaskChange]:
        return await self._send(ops.tasks_changes(task_id, cursor=cursor, limit=limit))


class AsyncJobs(_AsyncResource):
    async def get(self, job_id: str) -> Job:
        return await self._send(ops.jobs_get(job_id))

    async def retry(self, job_id: str) -> Job:
        return await self._send(ops.jobs_retry(job_id))

    async def cancel(self, job_id: str) -> Job:
        return await self._send(ops.jobs_cancel(job_id))

    def dlq(self, *, task_id: str | None = None, limit: int | None = None) -> AsyncIterator[Job]:
        return aiterate_pages(lambda cursor: self.dlq_page(task_id=task_id, cursor=cursor, limit=limit))

    async def dlq_page(
        self, *, task_id: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> Page[Job]:
        return await self._send(ops.dlq_page(task_id=task_id, cursor=cursor, limit=limit))


class AsyncSchedules(_AsyncResource):
    async def preview(self, schedule: Schedule, *, n: int | None = None) -> Preview:
        return await self._send(ops.schedules_preview(schedule, n=n))


class AsyncSecrets(_AsyncResource):
    async def list(self) -> list[Secret]:
        return await self._send(ops.secrets_list())

    async def get(self, name: str) -> Secret:
        return await self._send(ops.secrets_get(name))

    async def put(self, name: str, value: str) -> Secret:
        return await self._send(ops.secrets_put(name, value))

    async def delete(self, name: str) -> None:
        await self._send(ops.secrets_delete(name))


class AsyncCalendars(_AsyncResource):
    """The async twin of `Calendars`."""

    def list(self, *, limit: int | None = None) -> AsyncIterator[Calendar]:
        return aiterate_pages(lambda cursor: self.page(cursor=cursor, limit=limit))

    async def page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[Calendar]:
        return await self._send(ops.calendars_page(cursor=cursor, limit=limit))

    async def get(self, name: str) -> Calendar:
        return await self._send(ops.calendars_get(name))

    async def put(self, name: str, spec: CalendarSpec | dict[str, Any], *, etag: str | None = None) -> Calendar:
        return await self._send(ops.calendars_put(name, spec, etag=etag))

    async def delete(self, calendar: Calendar | str, *, etag: str | None = None) -> None:
        await self._send(ops.calendars_delete(calendar, etag=etag))


class AsyncSigningSecrets(_AsyncResource):
    async def list(self) -> list[SigningSecret]:
        return await self._send(ops.signing_secrets_list())

    async def create(self, *, previous_expires_in_seconds: int | None = None) -> SigningSecretCreated:
        return await self._send(ops.signing_secrets_create(previous_expires_in_seconds=previous_expires_in_seconds))

    async def get(self, secret_id: str) -> SigningSecret:
        return await self._send(ops.signing_secrets_get(secret_id))

    async def delete(self, secret_id: str) -> None:
        await self._send(ops.signing_secrets_delete(secret_id))


class AsyncRateLimits(_AsyncResource):
    def list(self, *, limit: int | None = None) -> AsyncIterator[RateLimit]:
        return aiterate_pages(lambda cursor: self.page(cursor=cursor, limit=limit))

    async def page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[RateLimit]:
        return await self._send(ops.rate_limits_page(cursor=cursor, limit=limit))

    async def set(self, origin: str, *, per_second: float, burst: int) -> RateLimit:
        return await self._send(ops.rate_limits_set(origin=origin, per_second=per_second, burst=burst))

    async def get(self, limit_id: str) -> RateLimit:
        return await self._send(ops.rate_limits_get(limit_id))

    async def delete(self, limit_id: str) -> None:
        await self._send(ops.rate_limits_delete(limit_id))


class AsyncNotifications(_AsyncResource):
    async def get(self) -> Notification:
        return await self._send(ops.notifications_get())

    async def put(
        self, *, url: str, events: Iterable[str], failing_after: int | None = None, enabled: bool | None = None
    ) -> Notification:
        return await self._send(
            ops.notifications_put(url=url, events=events, failing_after=failing_after, enabled=enabled)
        )

    async def delete(self) -> None:
        await self._send(ops.notifications_delete())

    def deliveries(self, *, limit: int | None = None) -> AsyncIterator[NotificationDelivery]:
        return aiterate_pages(lambda cursor: self.deliveries_page(cursor=cursor, limit=limit))

    async def deliveries_page(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> Page[NotificationDelivery]:
        return await self._send(ops.notifications_deliveries_page(cursor=cursor, limit=limit))
