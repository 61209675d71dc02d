"""The audit trail of tasks: the only module that writes, reads and purges `task_changes`.

Every use case that changes a task (tasks.services, the import, the auto-pause in
jobs.queue.task_health, the console's actions through the services) calls
`record_change` inside the transaction of its change: the change and its record
commit together or not at all. A record says who (`actor`), when, and each
changed field's old and new value as the API names it (`http.url`,
`http.headers.X-Team`, `labels.env`, `schedule`), built by `diff` with two rules:

- secrets never: a header whose name is a credential's (domain.masking) is recorded
  changed with both values masked, and every text value (URL, body, other headers,
  names) goes through the same masking as the console before it is stored;
  `masked` says the stored value is not the one the task holds;
- bounded: a value longer than MAX_VALUE_CHARS once masked (as text, or as JSON for
  objects) is stored cut to that many characters plus "…", with `truncated`; a
  record holds at most one entry per field, header and label (all bounded by the API).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from database.inserts import insert_row
from domain.masking import MASK, is_secret_name, mask_url, mask_value
from tasks.models import HttpMethod, MissedRuns, Overlap, Task, TaskChange, TaskStatus

MAX_VALUE_CHARS = 1024
MAX_ACTOR_LENGTH = TaskChange._meta.get_field("actor").max_length or 200
SYSTEM_ACTOR = "system"

# The task's fields a record tracks, as the API names them; "schedule" is cron + zone or run_at, whole.
_API_NAMES = {
    "name": "name",
    "status": "status",
    "paused_reason": "paused_reason",
    "schedule": "schedule",
    "http_url": "http.url",
    "http_method": "http.method",
    "http_body": "http.body",
    "timeout_seconds": "timeout_seconds",
    "max_attempts": "max_attempts",
    "backoff_base_seconds": "backoff_base_seconds",
    "priority": "priority",
    "secret_ref": "secret_ref",  # the name of a tenant's secret (shown by the API), never its value
    "missed_runs": "missed_runs",
    "auto_pause_after": "auto_pause_after",
}
# The model's fixed words (a status, a method, a policy): masking leaves each as it is
# (tests/tasks/test_changes.py checks), so they skip it.
_CHOICES = frozenset(value for choices in (TaskStatus, HttpMethod, MissedRuns, Overlap) for value in choices.values)
# Dictionaries recorded key by key: one entry per header or label that changed.
_KEYED = {"http_headers": "http.headers", "labels": "labels"}
# Written by the loops, never by a change a tenant or staff makes (or the ETag itself).
_UNTRACKED = {
    "id",
    "tenant_id",
    "version",
    "next_run_at",
    "created_at",
    "updated_at",
    "deleted_at",
    "idempotency_key",
    "request_sha256",
    "consecutive_failures",
    "cron_expression",
    "timezone",
    "run_at",
}


def staff_actor(username: str) -> str:
    """The actor of a console action."""
    return f"staff:{username}"


@functools.cache
def _tracked() -> tuple[str, ...]:
    return tuple(
        field.attname
        for field in Task._meta.concrete_fields
        if field.attname not in _UNTRACKED and not field.attname.startswith("last_run_")
    )


def snapshot(task: Task) -> dict[str, Any]:
    """The task's tracked fields by model name, the schedule as one value (as the API shows it)."""
    state = task.__dict__  # every concrete field's value is there (none is deferred on a task we record)
    values = {name: state[name] if name in state else getattr(task, name) for name in _tracked()}
    if task.run_at is not None:
        values["schedule"] = {"run_at": _json_value(task.run_at)}
    else:
        values["schedule"] = {"cron": task.cron_expression, "timezone": task.timezone}
    return values


def created(task: Task) -> list[dict[str, Any]]:
    """A create's entries: every field the new task sets (unset and empty ones left out), old values null.

    What `diff({}, set fields)` returns, without comparing each value with a missing old one.
    """
    entries: list[dict[str, Any]] = []
    for name, value in snapshot(task).items():
        if value is None or value == "" or value == {} or value == []:
            continue
        if name in _KEYED:
            entries += (
                _entry(f"{_KEYED[name]}.{key}", None, item, secret=_secret_key(name, key))
                for key, item in value.items()
                if item is not None
            )
        else:
            entries.append(_entry(_API_NAMES.get(name, name), None, value, url=name == "http_url"))
    return entries


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries of what changed from `old` to `new` (model field names; a create's `old` is {})."""
    entries: list[dict[str, Any]] = []
    for name in [*dict.fromkeys([*old, *new])]:
        before, after = old.get(name), new.get(name)
        if name in _KEYED:
            before, after = before or {}, after or {}
            for key in dict.fromkeys([*before, *after]):
                if before.get(key) != after.get(key):
                    entries.append(
                        _entry(f"{_KEYED[name]}.{key}", before.get(key), after.get(key), secret=_secret_key(name, key))
                    )
        elif before != after:
            entries.append(_entry(_API_NAMES.get(name, name), before, after, url=name == "http_url"))
    return entries


def field_change(field: str, old: Any, new: Any) -> dict[str, Any]:
    """One entry for a change that is not a task field (a backfill's range, say): masked and bounded alike."""
    return _entry(field, old, new)


def _secret_key(dictionary: str, key: str) -> bool:
    return dictionary == "http_headers" and is_secret_name(key)


def _entry(field: str, old: Any, new: Any, *, secret: bool = False, url: bool = False) -> dict[str, Any]:
    shown_old, masked_old, cut_old = _shown(old, secret=secret, url=url)
    shown_new, masked_new, cut_new = _shown(new, secret=secret, url=url)
    return {
        "field": field,
        "old": shown_old,
        "new": shown_new,
        "masked": masked_old or masked_new,
        "truncated": cut_old or cut_new,
    }


def _shown(value: Any, *, secret: bool, url: bool) -> tuple[Any, bool, bool]:
    """(the value as stored, masked?, cut?)."""
    if value is None:
        return None, False, False
    value = _json_value(value)
    if secret:
        return MASK, True, False
    shown: Any
    if isinstance(value, str):
        if value in _CHOICES:
            return str(value), False, False  # a status, a method, a policy: one of the model's fixed words
        shown = mask_url(value) if url else mask_value(value)
        masked = shown != value
    elif isinstance(value, dict | list):
        shown, masked = value, False
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        if len(text) > MAX_VALUE_CHARS:
            shown = text  # cut below, as text
    else:
        return value, False, False
    if isinstance(shown, str) and len(shown) > MAX_VALUE_CHARS:
        return shown[:MAX_VALUE_CHARS] + "…", masked, True
    return shown, masked, False


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def record_change(
    *,
    task_id: uuid.UUID,
    tenant_id: str,
    action: str,
    actor: str,
    changes: Iterable[dict[str, Any]] = (),
    version: int | None = None,
    at: datetime | None = None,
    deferred: bool = False,
) -> TaskChange:
    """Record one change of a task; call it inside the transaction that makes the change.

    `deferred`: its INSERT goes with the transaction's next statement (database.inserts.insert_row).

    `changes` are entries from `diff` or `field_change` (never raw values: they mask and bound);
    `action` a tasks.models.TaskChangeAction; `actor` "token:<sub>" / "tenant:<id>" (api.auth.actor_of),
    staff_actor(username) or SYSTEM_ACTOR; `version` the task's version after the change, when it has one.
    """
    change = TaskChange(
        task_id=task_id,
        tenant_id=tenant_id,
        action=action,
        actor=actor[:MAX_ACTOR_LENGTH],
        at=at or timezone.now(),
        version=version,
        changes=list(changes),
    )
    insert_row(change, deferred=deferred)
    return change


def task_changes_page(
    *, tenant_id: str, task_id: uuid.UUID, before: uuid.UUID | None, limit: int
) -> tuple[list[TaskChange], uuid.UUID | None] | None:
    """Up to `limit` changes of the tenant's task, newest first, and the next cursor; None: not its task.

    A deleted task's changes stay readable (its row stays); another tenant's task is None (a 404).
    Keyset on task_changes_task_idx (tenant_id, task_id, id): UUIDv7 ids grow with time.
    """
    if not Task.objects.filter(pk=task_id, tenant_id=tenant_id).exists():
        return None
    query = TaskChange.objects.filter(tenant_id=tenant_id, task_id=task_id)
    if before is not None:
        query = query.filter(pk__lt=before)
    rows = list(query.order_by("-pk")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].pk
    return rows, None


# The archiver's bounded purge: records older than the retention, oldest first, through
# task_changes_at_idx, at most `limit` rows a statement (short locks; a backlog drains over steps).
PURGE_STATEMENT = "DELETE FROM task_changes WHERE at < %(cutoff)s ORDER BY at LIMIT %(limit)s"


def purge_expired_changes(*, retention_days: int, limit: int, now: datetime | None = None) -> int:
    """Delete up to `limit` records older than `retention_days`; how many were deleted."""
    cutoff = connection.ops.adapt_datetimefield_value((now or timezone.now()) - timedelta(days=retention_days))
    with connection.cursor() as cursor:
        cursor.execute(PURGE_STATEMENT, {"cutoff": cutoff, "limit": limit})
        return cursor.rowcount
