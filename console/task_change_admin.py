"""The audit trail of tasks in the console: a read-only list with filters, and a task page's latest changes.

Records are written only by tasks.changes (in the transaction of each change) and are
never edited or deleted here; the archiver purges them after AUDIT_RETENTION_DAYS.
Values were masked before they were stored, so nothing here can show a credential.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from console.admin_base import BoundedReadOnlyAdmin, InputListFilter, preformatted, shown_time
from domain.ids import parse_id
from tasks.models import Task, TaskChange

SHOWN_ON_TASK = 20  # the task page's latest changes; the rest are a link away


class ChangeTenantFilter(InputListFilter):
    title = "tenant"
    parameter_name = "tenant"
    placeholder = "tenant id"

    def lookups(self, request, model_admin):
        return []

    def queryset(self, request, queryset):
        return queryset.filter(tenant_id=self.value()) if self.value() else queryset


class ChangeTaskFilter(InputListFilter):
    title = "task"
    parameter_name = "task_id"
    placeholder = "task id"

    def lookups(self, request, model_admin):
        return []

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        task_id = parse_id(self.value())
        return queryset.filter(task_id=task_id) if task_id else queryset.none()


class ChangeActorFilter(InputListFilter):
    title = "actor"
    parameter_name = "actor"
    placeholder = "staff:name, token:sub, system"

    def lookups(self, request, model_admin):
        return []

    def queryset(self, request, queryset):
        return queryset.filter(actor=self.value()) if self.value() else queryset


def changed_fields(change: TaskChange) -> str:
    """The changed fields' names, comma-separated (the list's column)."""
    return ", ".join(entry.get("field", "?") for entry in change.changes) or "—"


def changes_table(change: TaskChange):
    """Each changed field with its old and new value (as stored: masked and bounded)."""
    if not change.changes:
        return "—"
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        (
            (
                entry.get("field"),
                preformatted(_shown(entry.get("old"))),
                preformatted(_shown(entry.get("new"))),
                ", ".join(flag for flag in ("masked", "truncated") if entry.get(flag)) or "",
            )
            for entry in change.changes
        ),
    )
    return format_html(
        '<table class="task-changes"><thead><tr><th>field</th><th>old</th><th>new</th><th></th></tr></thead>'
        "<tbody>{}</tbody></table>",
        rows,
    )


def _shown(value) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def changes_url(task: Task) -> str:
    return f"{reverse('admin:tasks_taskchange_changelist')}?{urlencode({'task_id': str(task.pk)})}"


def latest_changes_block(task: Task):
    """The task page's latest SHOWN_ON_TASK changes, newest first, and a link to all of them."""
    # task_changes_task_idx (tenant_id, task_id, id): one range, newest first.
    latest = list(TaskChange.objects.filter(tenant_id=task.tenant_id, task_id=task.pk).order_by("-pk")[:SHOWN_ON_TASK])
    link = format_html('<a href="{}">all changes of this task</a>', changes_url(task))
    if not latest:
        return format_html("none recorded ({})", link)
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((shown_time(change.at), change.action, change.actor, changed_fields(change)) for change in latest),
    )
    return format_html(
        '<table class="task-changes"><thead><tr><th>when</th><th>action</th><th>by</th><th>fields</th></tr>'
        "</thead><tbody>{}</tbody></table><p>{}</p>",
        rows,
        link,
    )


@admin.register(TaskChange)
class TaskChangeAdmin(BoundedReadOnlyAdmin):
    list_display = ("at", "action", "actor", "task_link", "tenant_id", "changed")
    list_filter = (ChangeTenantFilter, ChangeTaskFilter, "action", ChangeActorFilter)
    search_fields = ("actor",)
    search_help_text = "A change id (exact UUID), or an actor exactly (staff:name, token:sub, system)."
    text_search = "actor"
    ordering = ("-id",)
    readonly_fields = ("id", "task_link", "tenant_id", "action", "actor", "at", "version", "changes_shown")
    fields = readonly_fields

    @admin.display(description="task")
    def task_link(self, obj: TaskChange):
        url = reverse("admin:tasks_task_change", args=[obj.task_id])
        return format_html('<a href="{}">{}</a>', url, obj.task_id)

    @admin.display(description="fields")
    def changed(self, obj: TaskChange) -> str:
        return changed_fields(obj)

    @admin.display(description="changes (credentials masked)")
    def changes_shown(self, obj: TaskChange):
        return changes_table(obj)
