"""Factories for tests: saved rows with sane defaults, overridable by keyword.

`make_task()` is an active per-minute cron task of tenant "tenant-a", due at the
start of the current minute; pass `run_at=` for a one-shot task (its cron and zone
then default to None and `next_run_at` to `run_at`). `make_job(task)` is a pending
job carrying the task's request snapshot, scheduled at the task's `next_run_at`.
`finished_job(task, status, age)` is a succeeded or dead job that finished `age` ago.
`make_tasks(count, next_run_at=...)` bulk-inserts many cron tasks; `db_now()` is the
database's clock, the one due dates are compared with. `varied_tasks()` is one
live task of each schedule kind with each optional part set and unset, as the API
renders them.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from jobs.models import Job, JobStatus
from tasks.models import HttpMethod, Overlap, Task, TaskStatus

_counter = itertools.count(1)


def make_task(**overrides: Any) -> Task:
    """An active cron task (saved)."""
    now = timezone.now()
    one_shot = overrides.get("run_at") is not None
    fields: dict[str, Any] = {
        "tenant_id": "tenant-a",
        "name": f"task {next(_counter)}",
        "http_url": "https://example.com/hook",
        "http_method": HttpMethod.POST,
        "http_headers": {},
        "http_body": "",
        "cron_expression": None if one_shot else "* * * * *",
        "timezone": None if one_shot else "UTC",
        "status": TaskStatus.ACTIVE,
        "next_run_at": overrides["run_at"] if one_shot else now.replace(second=0, microsecond=0),
    }
    fields.update(overrides)
    return Task.objects.create(**fields)


def varied_tasks(tenant_id: str = "tenant-a") -> list[Task]:
    """Live tasks of every schedule kind, each optional part set and unset (and one deleted task,
    not returned), newest first, read back as model instances with the ORM's converters."""
    now = timezone.now()
    made = [
        make_task(tenant_id=tenant_id),
        make_task(
            tenant_id=tenant_id,
            run_at=now + timedelta(days=1, microseconds=123),
            status=TaskStatus.PAUSED,
            paused_reason="paused by the tenant",
            http_headers={"X-A": "1", "Content-Type": "application/json"},
            http_body='{"k": "v"}',
            labels={"env": "prod", "team": ""},
            secret_ref="webhook-token",
            auto_pause_after=3,
            consecutive_failures=2,
            delete_after_completion=True,
        ),
        make_task(
            tenant_id=tenant_id,
            next_run_at=None,
            last_run_job_id=uuid.uuid4(),
            last_run_scheduled_at=now - timedelta(minutes=1),
            last_run_status="failed",
            last_run_http_status=503,
            last_run_at=now,
            timezone="Europe/Madrid",
            cron_expression="0 9 * * 1-5",
            window_seconds=600,
            starts_at=now - timedelta(days=2),
            ends_at=now + timedelta(days=30),
            max_runs=10,
            runs_scheduled=4,
            exclude_calendars=["holidays"],
            overlap=Overlap.SKIP,
            priority=9,
        ),
        make_task(
            tenant_id=tenant_id,
            cron_expression=None,
            every_seconds=5400,
            anchor=now - timedelta(hours=1),
            ends_at=now + timedelta(days=3),  # a run limit without max_runs: runs_scheduled shown
            runs_scheduled=2,
            timezone="America/New_York",
            status=TaskStatus.COMPLETED,
            paused_reason="left over from a pause",  # shown only while paused
            last_run_job_id=uuid.uuid4(),
            last_run_scheduled_at=now,
            last_run_status="succeeded",
            last_run_http_status=None,
            last_run_at=None,
        ),
        make_task(tenant_id=tenant_id, status=TaskStatus.DELETED, deleted_at=now),  # never on a page
    ]
    live = [task.pk for task in made if task.status != TaskStatus.DELETED]
    return list(Task.objects.filter(pk__in=live).order_by("-pk"))


def make_tasks(count: int, **overrides: Any) -> list[Task]:
    """`count` active per-minute cron tasks across three tenants, in one bulk insert."""
    fields: dict[str, Any] = {
        "http_url": "https://example.com/hook",
        "cron_expression": "* * * * *",
        "timezone": "UTC",
        "status": TaskStatus.ACTIVE,
        "next_run_at": timezone.now().replace(second=0, microsecond=0),
        **overrides,
    }
    return Task.objects.bulk_create(
        Task(**{"tenant_id": f"tenant-{n % 3}", "name": f"task {next(_counter)}", **fields}) for n in range(count)
    )


def db_now() -> datetime:
    """The database's clock (aware UTC)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOW(6)")
        return cursor.fetchone()[0].replace(tzinfo=UTC)


def make_job(task: Task, **overrides: Any) -> Job:
    """A pending job of `task` (saved), with the task's request snapshot."""
    scheduled_at = overrides.pop("scheduled_at", None) or task.next_run_at or timezone.now()
    fields: dict[str, Any] = {
        "tenant_id": task.tenant_id,
        "task": task,
        "scheduled_at": scheduled_at,
        "status": JobStatus.PENDING,
        "priority": task.priority,
        "attempt": 0,
        "max_attempts": task.max_attempts,
        "next_attempt_at": scheduled_at,
        "timeout_seconds": task.timeout_seconds,
        "backoff_base_seconds": task.backoff_base_seconds,
        "request_method": task.http_method,
        "request_url": task.http_url,
        "request_headers": task.http_headers,
        "request_body": task.http_body,
        "secret_ref": task.secret_ref,
    }
    fields.update(overrides)
    # A row made as if claimed `attempt` times (and never given back): its fence is the attempt's.
    fields.setdefault("fence", fields["attempt"])
    return Job.objects.create(**fields)


def finished_job(task, status, age, *, scheduled_minutes_ago=None, **overrides):
    """A terminal job of `task` that finished `age` ago (each with its own scheduled_at)."""
    now = timezone.now()
    finished = now - age
    minutes = scheduled_minutes_ago if scheduled_minutes_ago is not None else age / timedelta(minutes=1) + 1
    fields = {
        "status": status,
        "attempt": 1 if status == JobStatus.SUCCEEDED else 3,
        "started_at": finished - timedelta(seconds=2),
        "finished_at": finished,
        "http_status": 200 if status == JobStatus.SUCCEEDED else 500,
        "error": None if status == JobStatus.SUCCEEDED else "HTTP 500",
        "response_body": "ok",
        "scheduled_at": now - timedelta(minutes=minutes),
    }
    fields.update(overrides)
    return make_job(task, **fields)
