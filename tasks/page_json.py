"""A page of tasks as the JSON TaskOutput renders, written out field by field.

TaskOutput stays the schema and renders a single task. A page renders 50, and through DRF's
fields (a serializer built per page, a generic step per field) that cost more than the rest of
the request (docs/benchmarks/api.md). Each line below is what the TaskOutput field of the same
name renders; tests/tasks/test_page_json.py checks the two give the same dicts in the same key
order, and fails when TaskOutput gains a field this module does not write. It reads attributes
only, so it takes a Task or a selectors.TaskRow alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rest_framework import serializers

from api.compiled_representation import datetime_converter
from tasks.serializers import schedule_json

Iso = Callable[[Any], Any]


def task_page_json(tasks: Iterable[Any]) -> list[dict[str, Any]]:
    iso = datetime_converter(serializers.DateTimeField())  # the current zone, read once per page
    return [task_json(task, iso=iso) for task in tasks]


def task_json(task: Any, *, iso: Iso) -> dict[str, Any]:
    return {
        "id": str(task.id),
        "name": str(task.name),
        "status": str(task.status),
        "version": int(task.version),
        "schedule": schedule_json(task),
        "http": {
            "url": str(task.http_url),
            "method": str(task.http_method),
            "headers": _strings(task.http_headers),
            "body": str(task.http_body),
        },
        "timeout_seconds": int(task.timeout_seconds),
        "max_attempts": int(task.max_attempts),
        "backoff_base_seconds": int(task.backoff_base_seconds),
        "priority": int(task.priority),
        "secret_ref": _nullable(str, task.secret_ref),
        "missed_runs": str(task.missed_runs),
        "auto_pause_after": _nullable(int, task.auto_pause_after),
        "overlap": str(task.overlap),
        "delete_after_completion": bool(task.delete_after_completion),
        # Counted by the tick only for a task with run limits (jobs/sql/scheduler.sql).
        "runs_scheduled": task.runs_scheduled if task.max_runs is not None or task.ends_at is not None else None,
        "paused_reason": task.paused_reason if task.status == "paused" else None,
        "consecutive_failures": int(task.consecutive_failures),
        "labels": _strings(task.labels),
        "last_run": None if task.last_run_job_id is None else _last_run(task, iso),
        "next_run_at": _nullable(iso, task.next_run_at),
        "created_at": _nullable(iso, task.created_at),
        "updated_at": _nullable(iso, task.updated_at),
    }


def _last_run(task: Any, iso: Iso) -> dict[str, Any]:
    return {
        "job_id": str(task.last_run_job_id),
        "scheduled_at": _nullable(iso, task.last_run_scheduled_at),
        "status": _nullable(str, task.last_run_status),
        "http_status": _nullable(int, task.last_run_http_status),
        "at": _nullable(iso, task.last_run_at),
    }


def _strings(mapping: dict[Any, Any]) -> dict[str, str | None]:
    """A DictField of CharFields: keys and values as text, a null value kept null."""
    return {str(key): None if value is None else str(value) for key, value in mapping.items()}


def _nullable(convert: Callable[[Any], Any], value: Any) -> Any:
    return None if value is None else convert(value)
