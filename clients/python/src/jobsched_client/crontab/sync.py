"""Sync a parsed crontab with the tenant's tasks: plan, then apply (creates, If-Match edits, pruning).

A file's tasks are named `crontab:<label>:<key>` and, on a server with labels,
carry the label `crontab=<label>`; `file_tasks` is the one place that decides
which tasks belong to the file. The sync manages what a crontab line says
(schedule, the HTTP call, timeout, attempts, secret, label); priority, backoff,
missed-runs policy and pausing are left as the tenant set them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from jobsched_client.capabilities import Capabilities
from jobsched_client.client import Client
from jobsched_client.crontab.parsing import Crontab, CrontabEntry, CrontabError, LineProblem
from jobsched_client.errors import NotFound, ValidationFailed
from jobsched_client.models import HttpCall, Schedule, Task, TaskSpec

LABEL_KEY = "crontab"
NAME_PREFIX = "crontab"
PAGE_SIZE = 100
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$")

Action = Literal["create", "update", "delete", "unchanged"]


def check_label(label: str) -> str:
    if not _LABEL.match(label):
        raise ValueError(f"{label!r}: a crontab name is 1-63 of a-z 0-9 . _ - (starting and ending alphanumeric)")
    return label


def task_name(label: str, key: str) -> str:
    return f"{NAME_PREFIX}:{label}:{key}"


def key_of(label: str, task: Task) -> str | None:
    """The key in a task's name, or None when the name is not this file's."""
    prefix = task_name(label, "")
    return task.name[len(prefix) :] if task.name.startswith(prefix) else None


@dataclass(frozen=True)
class Change:
    action: Action
    key: str
    entry: CrontabEntry | None = None
    task: Task | None = None
    spec: TaskSpec | None = None
    patch: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    label: str
    changes: list[Change]
    prune: bool
    # Tasks of the file that are no longer in it, kept because --prune was not given.
    left_out: list[Change] = field(default_factory=list)

    def count(self, action: Action) -> int:
        return sum(1 for change in self.changes if change.action == action)

    @property
    def has_changes(self) -> bool:
        return any(change.action != "unchanged" for change in self.changes)


def belongs(label: str, *, name: str, labels: dict[str, str]) -> bool:
    """The crontab label names the file a task belongs to; without one, the name prefix does."""
    own = labels.get(LABEL_KEY)
    return own == label if own is not None else name.startswith(task_name(label, ""))


def file_tasks(api: Client, label: str) -> list[Task]:
    """The tenant's tasks that belong to the crontab `label` (see `belongs`).

    The labelled ones are asked of the server with the label filter; tasks without
    the label (made before the server had labels) are adopted by name and get the
    label on their next edit.
    """
    capabilities = api.capabilities()
    if not (capabilities.task_label_filter and capabilities.task_export):
        return [task for task in api.tasks.list(limit=PAGE_SIZE) if belongs(label, name=task.name, labels=task.labels)]
    labelled = list(api.tasks.list(limit=PAGE_SIZE, label={LABEL_KEY: label}))
    # The unlabelled ones: one streamed export rather than every page of the list, then a read for
    # the ETag of each (none once the file has been applied on a server with labels).
    unlabelled = [
        line["id"]
        for line in api.tasks.export()
        if LABEL_KEY not in (line.get("labels") or {}) and belongs(label, name=line["name"], labels={})
    ]
    adopted = []
    for task_id in unlabelled:
        try:
            adopted.append(api.tasks.get(task_id))
        except NotFound:  # deleted since the export: nothing to adopt
            continue
    return labelled + adopted


def desired_spec(entry: CrontabEntry, *, label: str, capabilities: Capabilities) -> TaskSpec:
    defaults = capabilities.task_defaults
    call = entry.call
    return TaskSpec(
        name=task_name(label, entry.key),
        schedule=Schedule(cron=entry.cron, timezone=entry.timezone),
        http=HttpCall(url=call.url, method=call.method, headers=dict(call.headers), body=call.body),
        timeout_seconds=call.timeout_seconds or defaults.get("timeout_seconds"),
        max_attempts=call.max_attempts or defaults.get("max_attempts"),
        secret_ref=entry.secret_ref,
        labels={LABEL_KEY: label} if capabilities.task_labels else None,
    )


def _same_cron(a: str | None, b: str | None) -> bool:
    # The server upper-cases names (mon -> MON) and lower-cases nicknames; spacing is free.
    return a is not None and b is not None and a.lower().split() == b.lower().split()


def _same_headers(a: dict[str, str], b: dict[str, str]) -> bool:
    return {k.lower(): v for k, v in a.items()} == {k.lower(): v for k, v in b.items()}


def task_patch(task: Task, spec: TaskSpec) -> dict[str, Any]:
    """The merge patch that makes `task` say what `spec` says (empty: nothing to change)."""
    patch: dict[str, Any] = {}
    if not (_same_cron(task.schedule.cron, spec.schedule.cron) and task.schedule.timezone == spec.schedule.timezone):
        patch["schedule"] = spec.schedule.to_json()
    current, wanted = task.http, spec.http
    if (current.method, current.url, current.body) != (wanted.method, wanted.url, wanted.body) or not _same_headers(
        current.headers, wanted.headers
    ):
        patch["http"] = {"url": wanted.url, "method": wanted.method, "headers": wanted.headers, "body": wanted.body}
    for name in ("timeout_seconds", "max_attempts"):
        if getattr(spec, name) is not None and getattr(task, name) != getattr(spec, name):
            patch[name] = getattr(spec, name)
    if task.secret_ref != spec.secret_ref:
        patch["secret_ref"] = spec.secret_ref
    if spec.labels is not None and any(task.labels.get(k) != v for k, v in spec.labels.items()):
        patch["labels"] = {**task.labels, **spec.labels}
    if task.name != spec.name:
        patch["name"] = spec.name
    return patch


def check_schedules(api: Client, crontab: Crontab) -> None:
    """Ask the server about each distinct schedule before anything changes: a bad one names its line."""
    problems: list[LineProblem] = []
    checked: dict[tuple[str, str], str | None] = {}
    for entry in crontab.entries:
        schedule = (entry.cron, entry.timezone)
        if schedule not in checked:
            try:
                api.schedules.preview(Schedule(cron=entry.cron, timezone=entry.timezone), n=1)
                checked[schedule] = None
            except ValidationFailed as exc:
                checked[schedule] = "; ".join(f"{name}: {', '.join(why)}" for name, why in exc.errors.items())
        if (reason := checked[schedule]) is not None:
            problems.append(LineProblem(entry.line, f"the server refuses the schedule ({reason})"))
    if problems:
        raise CrontabError(problems)


def plan_sync(api: Client, crontab: Crontab, *, label: str, prune: bool) -> Plan:
    """Compare the file with the tenant's tasks; nothing is changed. Raises CrontabError for a refused schedule."""
    check_label(label)
    check_schedules(api, crontab)
    capabilities = api.capabilities()
    by_key: dict[str, Task] = {}
    extra: list[Change] = []
    for task in sorted(file_tasks(api, label), key=lambda t: t.created_at):
        key = key_of(label, task)
        if key is None or key in by_key:  # renamed away from the prefix, or a duplicate name
            extra.append(Change("delete", key or task.name, task=task))
        else:
            by_key[key] = task
    changes: list[Change] = []
    for entry in crontab.entries:
        spec = desired_spec(entry, label=label, capabilities=capabilities)
        current = by_key.pop(entry.key, None)
        if current is None:
            changes.append(Change("create", entry.key, entry=entry, spec=spec))
            continue
        patch = task_patch(current, spec)
        changes.append(
            Change("update" if patch else "unchanged", entry.key, entry=entry, task=current, spec=spec, patch=patch)
        )
    gone = [Change("delete", key, task=task) for key, task in by_key.items()] + extra
    if prune:
        return Plan(label, changes + gone, prune)
    return Plan(label, changes, prune, left_out=gone)


@dataclass(frozen=True)
class Applied:
    change: Change
    task: Task | None


def apply_plan(api: Client, plan: Plan) -> list[Applied]:
    """Carry the plan out in file order, deletes last.

    An edit or delete of a task that changed since the plan raises PreconditionFailed.
    """
    done: list[Applied] = []
    for change in plan.changes:
        try:
            if change.action == "create" and change.spec is not None:
                done.append(Applied(change, api.tasks.create(change.spec)))
            elif change.action == "update" and change.task is not None:
                # If-Match the version the plan read: an edit made since is a 412, never overwritten.
                done.append(Applied(change, api.tasks.update(change.task, change.patch)))
            elif change.action == "delete" and change.task is not None:
                api.tasks.delete(change.task)
                done.append(Applied(change, None))
        except ValidationFailed as exc:
            if change.entry is None:
                raise
            raise CrontabError([LineProblem(change.entry.line, f"the server refuses it ({exc})")]) from exc
    return done
