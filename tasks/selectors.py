"""Reads of tasks for the tenant API: always scoped to one tenant, deleted tasks invisible."""

from __future__ import annotations

import collections
import functools
import hashlib
import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC
from typing import Any

from django.db import connection, models

from database import prepared
from tasks.models import Task, TaskLabel, TaskStatus
from tasks.task_json_sql import TASK_JSON
from vault.selectors import secret_exists

logger = logging.getLogger(__name__)

# Completed tasks (past ends_at or max_runs) stay visible, as stopped ones.
LIVE_STATUSES = (TaskStatus.ACTIVE, TaskStatus.PAUSED, TaskStatus.COMPLETED)


def task_get(*, tenant_id: str, task_id: uuid.UUID) -> Task | None:
    """The tenant's live task, or None (another tenant's task is None too: the API answers 404).

    Written out like a page (`_page_sql`), the columns the model's: the ORM's compile of the
    model's columns cost more than the read and the rest of a one-task request.
    """
    with connection.cursor() as cursor:
        cursor.execute(_GET_SQL, [Task._meta.pk.get_db_prep_value(task_id, connection), tenant_id, *LIVE_STATUSES])
        values = cursor.fetchone()
    if values is None:
        return None
    return Task.from_db(connection.alias, _ATTNAMES, _task_row(values))


def task_page(
    *,
    tenant_id: str,
    before: uuid.UUID | None,
    limit: int,
    labels: dict[str, str] | None = None,
    status: str | None = None,
) -> tuple[list[Any], uuid.UUID | None]:
    """Up to `limit` live tasks newest first (UUIDv7 ids grow with time) as `TaskRow`s, and the next cursor.

    Keyset pagination on (tenant_id, id) via tasks_tenant_idx: a page costs the
    same at any depth, and tasks created meanwhile never shift later pages. Each
    label selector (all must hold) is a plain join (`_page_sql`). One `status`
    reads tasks_tenant_status_idx (tenant_id, status, and the primary key after them).
    """
    rows = [_task_row(values) for values in _page_rows(_COLUMNS, tenant_id, before, limit, labels or {}, status)]
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].id
    return rows, None


def task_page_text(
    *,
    tenant_id: str,
    before: uuid.UUID | None,
    limit: int,
    labels: dict[str, str] | None = None,
    status: str | None = None,
) -> tuple[str | None, uuid.UUID | None]:
    """task_page's tasks as the JSON text of an array of TaskOutput objects (times in UTC), and the next cursor.

    The database writes each task's JSON (tasks/task_json_sql.py) in the read that finds it.
    The text is None when it wrote a task as NULL (a member left unguarded): the caller then
    renders the page from task_page, and the log says so.
    """
    rows = _page_rows(_JSON_COLUMNS, tenant_id, before, limit, labels or {}, status)
    next_id = uuid.UUID(bytes=bytes(rows[limit - 1][0])) if len(rows) > limit else None
    texts = [text for _, text in rows[:limit]]
    if None in texts:
        logger.error("a task's JSON written as NULL", extra={"event": "task_page_text_null", "tenant_id": tenant_id})
        return None, next_id
    return "[" + ",".join(texts) + "]", next_id


def _page_rows(
    columns: str, tenant_id: str, before: uuid.UUID | None, limit: int, labels: dict[str, str], status: str | None
) -> tuple[tuple[Any, ...], ...]:
    """Up to `limit` + 1 rows of `columns`: one more than the page tells whether a next page exists."""
    params: list[str | bytes | int] = []
    for key, value in labels.items():
        params += [tenant_id, key, value]
    params += [tenant_id, *LIVE_STATUSES]
    if status is not None:
        params.append(status)
    if before is not None:
        params.append(before.bytes)
    params.append(limit + 1)
    sql = _page_sql(columns, len(labels), status is not None, before is not None)
    with connection.cursor() as cursor:
        if columns == _JSON_COLUMNS and len(labels) <= 1:
            # The UTC pages most asked for, parsed once per connection: at most four statements of
            # about 230 KB each in the server's memory for the connection (database/prepared.py).
            prepared.execute(cursor, name=_statement_name(sql), sql=sql, params=params)
        else:
            cursor.execute(sql, params)
        return cursor.fetchall()


# A page's task as the model's attribute values (attnames, the same Python values), without a
# model instance: a page of 50 instances and the ORM's converters cost more than the rest of
# the request (docs/benchmarks/api.md). Built from the model's fields, so it follows the model.
TaskRow = collections.namedtuple(  # type: ignore[misc]  # mypy wants literal names; these are the model's
    "TaskRow", [field.attname for field in Task._meta.concrete_fields]
)


def _column_reader(field: models.Field[Any, Any]) -> Callable[[Any], Any] | None:
    """What the ORM's converters turn this column's database value into; None when it keeps it."""
    if isinstance(field, models.DateTimeField):
        return lambda value: None if value is None else value.replace(tzinfo=UTC)  # stored in UTC
    if isinstance(field, models.BooleanField):
        return lambda value: None if value is None else bool(value)
    if hasattr(field, "from_db_value"):
        return lambda value: field.from_db_value(value, None, connection)
    return None


_READERS = [
    (index, reader) for index, field in enumerate(Task._meta.concrete_fields) if (reader := _column_reader(field))
]


def _task_row(values: tuple[Any, ...]) -> Any:
    converted = list(values)
    for index, read in _READERS:
        converted[index] = read(converted[index])
    return TaskRow._make(converted)


_COLUMNS = ", ".join(f"t.`{field.column}`" for field in Task._meta.concrete_fields)
_ATTNAMES = [field.attname for field in Task._meta.concrete_fields]
_GET_SQL = (
    f"SELECT {_COLUMNS} FROM {Task._meta.db_table} AS t "
    f"WHERE t.id = %s AND t.tenant_id = %s AND t.status IN ({', '.join(['%s'] * len(LIVE_STATUSES))})"
)
_JSON_COLUMNS = f"t.id, {TASK_JSON}"


@functools.cache
def _statement_name(sql: str) -> str:
    """The page's prepared statement: one name for each text (database/prepared.py)."""
    return "task_page_" + hashlib.sha256(sql.encode()).hexdigest()[:16]


@functools.cache
def _page_sql(columns: str, selectors: int, by_status: bool, after_cursor: bool) -> str:
    """The page's text, built once per shape.

    Written out rather than built by the ORM: the ORM's compile, and for a label selector its
    semi-join and the optimizer's semi-join planning, cost more than the read on every request
    (docs/benchmarks/api.md). Each selector is a plain join: an eq_ref probe of
    task_labels_task_key_uniq (task_id, key) or a range of task_labels_select_idx, whichever
    the optimizer finds cheaper.
    """
    joins = " ".join(
        f"JOIN {TaskLabel._meta.db_table} AS l{n} ON l{n}.task_id = t.id AND l{n}.tenant_id = %s "
        f"AND l{n}.`key` = %s AND l{n}.`value` = %s"
        for n in range(selectors)
    )
    live = ", ".join(["%s"] * len(LIVE_STATUSES))
    where = f"t.tenant_id = %s AND t.status IN ({live})"
    where += " AND t.status = %s" if by_status else ""
    where += " AND t.id < %s" if after_cursor else ""
    return f"SELECT {columns} FROM {Task._meta.db_table} AS t {joins} WHERE {where} ORDER BY t.id DESC LIMIT %s"


def task_export(*, tenant_id: str, batch: int) -> Iterator[Task]:
    """Every live task of the tenant, oldest first, read `batch` at a time by keyset on tasks_tenant_idx."""
    after: uuid.UUID | None = None
    while True:
        query = Task.objects.filter(tenant_id=tenant_id, status__in=LIVE_STATUSES)
        if after is not None:
            query = query.filter(pk__gt=after)
        rows = list(query.order_by("pk")[:batch])
        yield from rows
        if len(rows) < batch:
            return
        after = rows[-1].pk


def task_by_idempotency_key(*, tenant_id: str, key: str) -> Task | None:
    """The task a create with this key made (deleted ones included: the key stays bound)."""
    return Task.objects.filter(tenant_id=tenant_id, idempotency_key=key).first()


def task_secret_found(*, task: Task) -> bool | None:
    """Whether the task's secret_ref names a secret its tenant has now (None: it names none).

    Checked at create time, but the secret may have been deleted since; the executor then
    fails the call with "secret unavailable" instead of sending it.
    """
    if not task.secret_ref:
        return None
    return secret_exists(tenant_id=task.tenant_id, name=task.secret_ref)
