"""A task as the JSON TaskOutput describes, written out field by field: every answer with tasks.

A page of tasks in UTC, the API's zone, is written by the database instead (tasks/task_json_sql.py);
this module writes it in any other zone.

TaskOutput stays the schema (OpenAPI) and the reference. Rendering through DRF's fields builds
a serializer per answer and takes a generic step per field, which cost more than the rest of a
page's request (docs/benchmarks/api.md). Each line below is what the TaskOutput field of the
same name renders; tests/tasks/test_task_json.py checks the two give the same dicts in the same
key order, and fails when TaskOutput gains a field this module does not write. It reads
attributes only, so it takes a Task or a selectors.TaskRow alike.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from tasks.serializers import paused_reason_json, runs_scheduled_json, schedule_json

Iso = Callable[[Any], Any]


def task_json(task: Any) -> dict[str, Any]:
    """One task's answer (a create, a read, a change)."""
    return _task_json(task, _iso_in_current_zone())


def task_page_json(tasks: Iterable[Any]) -> list[dict[str, Any]]:
    iso = _iso_in_current_zone()  # the zone read once per page
    return [_task_json(task, iso) for task in tasks]


def _task_json(task: Any, iso: Iso) -> dict[str, Any]:
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
        "runs_scheduled": runs_scheduled_json(task),
        "paused_reason": paused_reason_json(task),
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


def _iso_in_current_zone() -> Iso:
    """DRF's DateTimeField rendering (ISO 8601 in the current zone, "Z" for UTC), the zone read now.

    DRF looks the zone up for every value; anything but an aware datetime takes DRF's own path.
    """
    zone = timezone.get_current_timezone()

    def iso(value: Any) -> Any:
        if not isinstance(value, datetime.datetime) or value.utcoffset() is None:
            return _drf_iso(value)
        try:
            text = value.astimezone(zone).isoformat()
        except OverflowError:
            return _drf_iso(value)  # DRF's "overflow" error
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return iso


def _drf_iso(value: Any) -> Any:
    # Built only for a value DRF's own path renders (a field per answer cost as much as the rest of it).
    return serializers.DateTimeField().to_representation(value)
