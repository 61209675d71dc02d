"""Import a tenant's tasks from JSON lines (what `GET /v1/tasks/export` writes): upsert by name, all or nothing.

Every line is validated as a create would be before anything is written; a refused
line makes the whole import a 400 naming each one. Then, in one transaction, a name
the tenant has no live task of is created and a name it has one of is edited
(only the fields that differ, so a task the file already matches keeps its version):
importing the same file twice changes nothing the second time. A dry run
answers the same plan and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from tasks import services
from tasks.models import Task, TaskChangeAction
from tasks.selectors import LIVE_STATUSES

logger = logging.getLogger(__name__)

MAX_IMPORT_LINES = 200
CREATE, UPDATE, UNCHANGED = "create", "update", "unchanged"


class ImportRefused(Exception):
    """Lines that cannot be imported, as {"lines[3].schedule.cron": ["..."]}; nothing was written."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__(f"{len(errors)} refused")
        self.errors = errors


@dataclass
class PlannedLine:
    line: int
    name: str
    action: str
    fields: list[str]
    task_id: Any = None
    # What the write needs: the validated model fields and schedule, and the version the plan read.
    model_fields: dict[str, Any] = field(default_factory=dict, repr=False)
    schedule_spec: services.ScheduleSpec | None = field(default=None, repr=False)
    version: int | None = field(default=None, repr=False)


def _existing_by_name(tenant_id: str, names: list[str]) -> dict[str, list[Task]]:
    found: dict[str, list[Task]] = {}
    for task in Task.objects.filter(tenant_id=tenant_id, status__in=LIVE_STATUSES, name__in=names):
        found.setdefault(task.name, []).append(task)
    return found


def _changed_fields(current: Task, fields: dict[str, Any], schedule_spec: services.ScheduleSpec) -> list[str]:
    changed = sorted(name for name, value in fields.items() if getattr(current, name) != value)
    if schedule_spec != services.ScheduleSpec.of(current):
        changed.append("schedule")
    return changed


def tasks_import_plan(
    *,
    tenant_id: str,
    lines: list[Any],
    validate: Callable[..., tuple[dict[str, Any], services.ScheduleSpec]],
) -> list[PlannedLine]:
    """Validate every line (`validate(data, tenant_id=, current=)` raises {field: [msg]} dicts) and plan it."""
    errors: dict[str, list[str]] = {}
    names: dict[str, int] = {}
    parsed: list[tuple[int, dict[str, Any]]] = []
    for number, data in enumerate(lines, start=1):
        prefix = f"lines[{number}]"
        if not isinstance(data, dict):
            errors[prefix] = ["each line is one task as a JSON object"]
            continue
        name = data.get("name")
        if isinstance(name, str):
            if name in names:
                errors[f"{prefix}.name"] = [f"the name is also on line {names[name]}: names key the import"]
                continue
            names[name] = number
        parsed.append((number, data))
    existing = _existing_by_name(tenant_id, list(names))
    planned: list[PlannedLine] = []
    for number, data in parsed:
        prefix = f"lines[{number}]"
        name = data.get("name")
        same_name = existing.get(name, []) if isinstance(name, str) else []
        if len(same_name) > 1:
            errors[f"{prefix}.name"] = [f"{len(same_name)} live tasks have this name; rename or delete all but one"]
            continue
        current = same_name[0] if same_name else None
        try:
            fields, schedule_spec = validate(data, tenant_id=tenant_id, current=current)
        except LineInvalid as exc:
            errors.update({f"{prefix}.{key}": value for key, value in exc.errors.items()})
            continue
        if current is None:
            action, changed = CREATE, []
        else:
            changed = _changed_fields(current, fields, schedule_spec)
            action = UPDATE if changed else UNCHANGED
        planned.append(
            PlannedLine(
                line=number,
                name=fields["name"],
                action=action,
                fields=changed,
                task_id=current.pk if current else None,
                model_fields=fields,
                schedule_spec=schedule_spec,
                version=current.version if current else None,
            )
        )
    if errors:
        raise ImportRefused(errors)
    return planned


class LineInvalid(Exception):
    """One line's validation errors, keyed by field (`schedule.cron`)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("line invalid")
        self.errors = errors


def tasks_import_apply(*, tenant_id: str, planned: list[PlannedLine], actor: str) -> list[PlannedLine]:
    """Write the plan in one transaction: a create over the limit or an edit raced by another writer undoes it all.

    Each created or edited task's audit record says "import", by `actor`.

    Raises services.VersionMismatch (a task changed since the plan read it) or
    limits.ActiveTaskLimitReached; nothing is written then.
    """
    with transaction.atomic():
        for item in planned:
            assert item.schedule_spec is not None
            if item.action == CREATE:
                task, _ = services.task_create(
                    tenant_id=tenant_id,
                    fields=item.model_fields,
                    schedule_spec=item.schedule_spec,
                    actor=actor,
                    action=TaskChangeAction.IMPORT,
                )
                item.task_id = task.pk
            elif item.action == UPDATE:
                # The version the plan read: an edit committed since matches 0 rows (412), never a lost update.
                services.task_update(
                    tenant_id=tenant_id,
                    task_id=item.task_id,
                    expected_version=item.version or 0,
                    fields=item.model_fields,
                    schedule_spec=item.schedule_spec,
                    actor=actor,
                    action=TaskChangeAction.IMPORT,
                )
    logger.info(
        "tasks imported",
        extra={
            "event": "tasks_imported",
            "tenant_id": tenant_id,
            "tasks_created": sum(item.action == CREATE for item in planned),
            "tasks_updated": sum(item.action == UPDATE for item in planned),
        },
    )
    return planned
