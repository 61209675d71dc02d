"""Reads of tasks for the tenant API: always scoped to one tenant, deleted tasks invisible."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator

from tasks.models import Task, TaskLabel, TaskStatus
from vault.selectors import secret_exists

# Completed tasks (past ends_at or max_runs) stay visible, as stopped ones.
LIVE_STATUSES = (TaskStatus.ACTIVE, TaskStatus.PAUSED, TaskStatus.COMPLETED)


def task_get(*, tenant_id: str, task_id: uuid.UUID) -> Task | None:
    """The tenant's live task, or None (another tenant's task is None too: the API answers 404)."""
    return Task.objects.filter(pk=task_id, tenant_id=tenant_id, status__in=LIVE_STATUSES).first()


def task_page(
    *,
    tenant_id: str,
    before: uuid.UUID | None,
    limit: int,
    labels: dict[str, str] | None = None,
    status: str | None = None,
) -> tuple[list[Task], uuid.UUID | None]:
    """Up to `limit` live tasks newest first (UUIDv7 ids grow with time), and the next cursor.

    Keyset pagination on (tenant_id, id) via tasks_tenant_idx: a page costs the
    same at any depth, and tasks created meanwhile never shift later pages. Each
    label selector (all must hold) is a join on task_labels_select_idx (`_labelled_page`). One `status`
    reads tasks_tenant_status_idx (tenant_id, status, and the primary key after them).
    """
    if labels:
        rows = _labelled_page(tenant_id=tenant_id, before=before, limit=limit + 1, labels=labels, status=status)
        if len(rows) > limit:
            return rows[:limit], rows[limit - 1].pk
        return rows, None
    query = Task.objects.filter(tenant_id=tenant_id, status__in=LIVE_STATUSES)
    if status is not None:
        query = query.filter(status=status)
    if before is not None:
        query = query.filter(pk__lt=before)
    rows = list(query.order_by("-pk")[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].pk
    return rows, None


def _labelled_page(
    *, tenant_id: str, before: uuid.UUID | None, limit: int, labels: dict[str, str], status: str | None
) -> list[Task]:
    """The filtered list's page as one plain join per selector, newest first.

    Written out rather than built by the ORM: the ORM's semi-join cost the filtered page its
    compile and the optimizer's semi-join planning on every request (docs/benchmarks/api.md),
    while this text is built once per shape and each join is an eq_ref probe of
    task_labels_task_key_uniq (task_id, key) or a range of task_labels_select_idx, whichever
    the optimizer finds cheaper for the selector.
    """
    sql = _labelled_sql(len(labels), status is not None, before is not None)
    params: list[object] = []
    for key, value in labels.items():
        params += [tenant_id, key, value]
    params += [tenant_id, *LIVE_STATUSES]
    if status is not None:
        params.append(status)
    if before is not None:
        params.append(before.bytes)
    params.append(limit)
    return list(Task.objects.raw(sql, params))


@functools.cache
def _labelled_sql(selectors: int, by_status: bool, after_cursor: bool) -> str:
    columns = ", ".join(f"t.`{field.column}`" for field in Task._meta.concrete_fields)
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
