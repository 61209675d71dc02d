"""Tasks in the admin: find them, and pause or resume them through the task services.

Fields are read-only here (edits go through the tenant API, which validates the
schedule and the egress policy); pause/resume need tasks.change_task and bump
the version like the API does. next_run_at and version are never editable.
Tenant limits: staff overrides of the per-tenant limits, and pausing a whole
tenant (tasks.pausing), audited like the other support actions.
"""

from __future__ import annotations

import functools

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from console.admin_base import BoundedReadOnlyAdmin, InputListFilter, masked_headers_block, preformatted, shown_time
from console.task_change_admin import latest_changes_block
from domain.masking import mask_body, mask_url
from domain.tenants import MAX_TENANT_ID_LENGTH, TENANT_ID_CHARACTERS, is_valid_tenant_id
from tasks import changes, limits, pausing, services
from tasks.labels import LabelError, parse_selector
from tasks.models import Task, TaskLabel, TaskStatus, TenantLimits
from tasks.schedule.every import format_every

NAME_SHOWN = 40  # characters of a task's name in the list; the whole name is its title


class TaskTenantFilter(InputListFilter):
    title = "tenant"
    parameter_name = "tenant"
    placeholder = "tenant id"
    offered = 20

    def lookups(self, request, model_admin):
        # DISTINCT along tasks_tenant_idx (tenant_id, id), stopped after `offered` tenants.
        tenants = Task.objects.order_by("tenant_id").values_list("tenant_id", flat=True).distinct()[: self.offered]
        return [(tenant, tenant) for tenant in tenants]

    def queryset(self, request, queryset):
        return queryset.filter(tenant_id=self.value()) if self.value() else queryset


def with_label(queryset, *, selector: str, tenant_id: str | None):
    """Tasks carrying the label `key=value` (semi-join on task_labels); none for a malformed selector.

    With a tenant, the semi-join reads task_labels_select_idx (tenant_id, key, value, task);
    across tenants it reads task_labels whole (one row per label, far fewer than jobs).
    """
    try:
        wanted = parse_selector([selector])
    except LabelError:
        return queryset.none()
    for key, value in wanted.items():
        labelled = TaskLabel.objects.filter(key=key, value=value)
        if tenant_id:
            labelled = labelled.filter(tenant_id=tenant_id)
        queryset = queryset.filter(pk__in=labelled.values("task_id"))
    return queryset


class TaskLabelFilter(InputListFilter):
    title = "label"
    parameter_name = "label"
    placeholder = "key=value"

    def lookups(self, request, model_admin):
        return []

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        return with_label(queryset, selector=self.value(), tenant_id=request.GET.get(TaskTenantFilter.parameter_name))


def task_state(task: Task) -> str:
    """What the task does now, in words: a fired one-shot is not "active", a paused one says why."""
    if task.status == TaskStatus.DELETED:
        return "deleted"
    if task.status == TaskStatus.PAUSED:
        return f"paused: {task.paused_reason}" if task.paused_reason else "paused"
    if task.status == TaskStatus.COMPLETED:
        return f"completed ({task.runs_scheduled} runs; past its end or run limit)"
    if task.next_run_at is None:
        # The scheduler clears next_run_at once a one-shot's job is created (workers/scheduler.py).
        return "fired (one-shot, no next run)" if task.is_one_shot else "active, no next run"
    return "active"


def shown_next_run(task: Task) -> str:
    """The next run, or a dash: a deleted task never runs again, a paused one gets a new run on resume."""
    return shown_time(task.next_run_at) if task.status == TaskStatus.ACTIVE else "—"


PAUSED_BY_SUPPORT = "paused by support staff"
TENANT_PAUSED = "paused (fires nothing until resumed)"


@admin.register(Task)
class TaskAdmin(BoundedReadOnlyAdmin):
    # Few, short columns so the list fits a 1400 px window (tests/browser/test_console_layout.py).
    list_display = (
        "short_name",
        "tenant_id",
        "state",
        "schedule",
        "next_run",
        "last_run",
        "labels_list",
        "updated_at",
    )
    list_display_links = ("short_name",)
    list_filter = (TaskTenantFilter, "status", TaskLabelFilter)
    search_fields = ("name",)  # shows the search box; the search itself is get_search_results
    search_help_text = "A task id (exact UUID), a label as key=value, or text in the name."
    text_search = "name__icontains"
    ordering = ("-id",)
    actions = ["pause_selected", "resume_selected"]

    readonly_fields = (
        "state",
        "schedule",
        "next_run",
        "labels_list",
        "tenant_pause",
        "excluded_calendars",
        "masked_http_url",
        "masked_http_headers",
        "masked_http_body",
        "latest_changes",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "tenant_id",
                    "name",
                    "labels_list",
                    "status",
                    "state",
                    "paused_reason",
                    "tenant_pause",
                    "version",
                    "created_at",
                    "updated_at",
                    "deleted_at",
                )
            },
        ),
        (
            "Schedule",
            {
                "fields": (
                    "schedule",
                    "excluded_calendars",
                    "next_run",
                    "priority",
                    "missed_runs",
                    "overlap",
                    "window_seconds",
                    "starts_at",
                    "ends_at",
                    "max_runs",
                    "runs_scheduled",
                    "delete_after_completion",
                )
            },
        ),
        (
            "How it is doing",
            {
                "fields": (
                    "last_run_status",
                    "last_run_http_status",
                    "last_run_scheduled_at",
                    "last_run_at",
                    "last_run_job_id",
                    "consecutive_failures",
                    "auto_pause_after",
                )
            },
        ),
        (
            "HTTP call (credentials masked)",
            {"fields": ("http_method", "masked_http_url", "masked_http_headers", "masked_http_body", "secret_ref")},
        ),
        ("Retries", {"fields": ("timeout_seconds", "max_attempts", "backoff_base_seconds")}),
        ("Changes (audit trail, newest first)", {"fields": ("latest_changes",)}),
    )

    def has_pause_permission(self, request) -> bool:
        return request.user.has_perm("tasks.change_task")

    def get_queryset(self, request):
        # A paused tenant's active task fires nothing (tasks.pausing): say so beside its own status.
        # One probe of tenant_limits' primary key per row, in the list's own statement.
        paused = TenantLimits.objects.filter(tenant_id=OuterRef("tenant_id"), paused=True)
        return super().get_queryset(request).annotate(tenant_is_paused=Exists(paused))

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if "=" in term:
            tenant_id = request.GET.get(TaskTenantFilter.parameter_name)
            return with_label(queryset, selector=term, tenant_id=tenant_id), False
        return super().get_search_results(request, queryset, search_term)

    @admin.display(description="name", ordering="name")
    def short_name(self, obj: Task):
        if len(obj.name) <= NAME_SHOWN:
            return obj.name
        return format_html('<span title="{}">{}…</span>', obj.name, obj.name[: NAME_SHOWN - 1])

    @admin.display(description="state", ordering="status")
    def state(self, obj: Task):
        if getattr(obj, "tenant_is_paused", False):
            return format_html("{}<br>tenant {}", task_state(obj), TENANT_PAUSED)
        return task_state(obj)

    @admin.display(description="next run at", ordering="next_run_at")
    def next_run(self, obj: Task) -> str:
        return shown_next_run(obj)

    @admin.display(description="last run")
    def last_run(self, obj: Task) -> str:
        if obj.last_run_status is None:
            return "—"
        if obj.consecutive_failures:
            return f"{obj.last_run_status} ({obj.consecutive_failures} dead in a row)"
        return obj.last_run_status

    @admin.display(description="labels")
    def labels_list(self, obj: Task):
        if not obj.labels:
            return "—"
        return format_html_join("", '<span class="task-label">{}={}</span> ', sorted((obj.labels or {}).items()))

    @admin.display(description="tenant pause")
    def tenant_pause(self, obj: Task) -> str:
        return TENANT_PAUSED if getattr(obj, "tenant_is_paused", False) else "—"

    @admin.display(description="schedule")
    def schedule(self, obj: Task) -> str:
        if obj.run_at is not None:
            return f"once at {obj.run_at:%Y-%m-%d %H:%M:%S} UTC"
        if obj.every_seconds is not None:
            anchor = f"{obj.anchor:%Y-%m-%d %H:%M:%S} UTC" if obj.anchor else "—"
            return f"every {format_every(obj.every_seconds)} from {anchor}"
        return f"{obj.cron_expression} ({obj.timezone})"

    @admin.display(description="excluded calendars")
    def excluded_calendars(self, obj: Task):
        """schedule.exclude_calendars, each linked to its calendar's page (runs on their dates are skipped)."""
        if not obj.exclude_calendars:
            return "—"
        links = [
            (reverse("admin:calendars_calendar_changelist") + "?" + urlencode({"q": name}), name)
            for name in obj.exclude_calendars
        ]
        return format_html_join(", ", '<a href="{}">{}</a>', links)

    @admin.display(description="URL")
    def masked_http_url(self, obj: Task) -> str:
        return mask_url(obj.http_url)

    @admin.display(description="headers")
    def masked_http_headers(self, obj: Task):
        return masked_headers_block(obj.http_headers)

    @admin.display(description="body")
    def masked_http_body(self, obj: Task):
        return preformatted(mask_body(obj.http_body))

    @admin.display(description="latest changes")
    def latest_changes(self, obj: Task):
        return latest_changes_block(obj)

    @admin.action(description="Pause selected tasks", permissions=["pause"])
    def pause_selected(self, request, queryset):
        self._apply(request, queryset, "pause")

    @admin.action(description="Resume selected tasks (at their next future run)", permissions=["pause"])
    def resume_selected(self, request, queryset):
        self._apply(request, queryset, "resume")

    def _apply(self, request, queryset, verb: str) -> None:
        # Each task's change and its audit record commit together (tasks.services), by this staff user.
        actor = changes.staff_actor(request.user.get_username())
        call = (
            functools.partial(services.task_pause, reason=PAUSED_BY_SUPPORT, actor=actor)
            if verb == "pause"
            else functools.partial(services.task_resume, actor=actor)
        )
        limit = settings.ADMIN_BULK_RETRY_LIMIT
        selected = list(queryset.only("id", "tenant_id", "version")[: limit + 1])
        changed: list[Task] = []
        unchanged = missing = busy = over_limit = 0
        for task in selected[:limit]:
            try:
                after = call(tenant_id=task.tenant_id, task_id=task.pk)
            except services.TaskNotFound:
                missing += 1
                continue
            except services.VersionMismatch:
                # The tenant kept editing it meanwhile; the agent can try again.
                busy += 1
                continue
            except limits.ActiveTaskLimitReached:
                # A resume that would pass the tenant's active-task limit stays paused (the API's 409).
                over_limit += 1
                continue
            if after.version != task.version:
                changed.append(after)
            else:
                unchanged += 1
        if changed:
            LogEntry.objects.log_actions(
                user_id=request.user.pk,
                queryset=changed,
                action_flag=CHANGE,
                change_message=f"{verb}d from the admin",
            )
        past = "paused" if verb == "pause" else "resumed"
        text = f"{past.capitalize()} {len(changed)}; already {past} {unchanged}; deleted or gone {missing}."
        if busy:
            text += f" Being edited by the tenant, try again: {busy}."
        if over_limit:
            text += f" Left paused, their tenant is at its active-task limit: {over_limit}."
        if len(selected) > limit:
            text += f" Only the first {limit} were handled (ADMIN_BULK_RETRY_LIMIT)."
        clean = unchanged == missing == busy == over_limit == 0 and len(selected) <= limit
        self.message_user(request, text, messages.SUCCESS if clean else messages.WARNING)


class TenantLimitsForm(forms.ModelForm):
    class Meta:
        model = TenantLimits
        fields = ("tenant_id", "max_running_jobs", "max_active_tasks", "note")

    def clean_tenant_id(self) -> str:
        return _clean_tenant_id(self.cleaned_data["tenant_id"])


class TenantPauseForm(forms.Form):
    tenant_id = forms.CharField(label="Tenant id", max_length=MAX_TENANT_ID_LENGTH)
    reason = forms.CharField(
        max_length=pausing.MAX_REASON_LENGTH,
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="Why, for the other agents (an incident number, what the tenant's endpoint does).",
    )

    def clean_tenant_id(self) -> str:
        return _clean_tenant_id(self.cleaned_data["tenant_id"].strip())


def _clean_tenant_id(value: str) -> str:
    if not is_valid_tenant_id(value):
        raise forms.ValidationError(f"A tenant id is 1-{MAX_TENANT_ID_LENGTH} of {TENANT_ID_CHARACTERS}.")
    return value


PAUSE_LOG_MESSAGE = "Paused the tenant: {reason}"
RESUME_LOG_MESSAGE = "Resumed the tenant"


@admin.register(TenantLimits)
class TenantLimitsAdmin(admin.ModelAdmin):
    """Per-tenant overrides of the limits (tasks.add/change/delete_tenantlimits); empty = the setting.

    Pausing and resuming a whole tenant lives here too, behind its own permission
    (tasks.pause_tenants, in the support group): the pause form, a resume button on a
    tenant's page, and the *Resume selected tenants* action; each one is audited.
    """

    form = TenantLimitsForm

    list_display = ("tenant_id", "pause_state", "running_jobs_limit", "active_tasks_limit", "note", "updated_at")
    list_filter = ("paused",)  # tenant_limits_paused_idx
    search_fields = ("tenant_id",)
    search_help_text = "A tenant id, exact."
    ordering = ("tenant_id",)
    fields = ("tenant_id", "max_running_jobs", "max_active_tasks", "note", "pause_state", "updated_at")
    readonly_fields = ("pause_state", "updated_at")
    list_per_page = 50
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # no per-filter counts over every tenant's row
    actions = ["resume_selected"]

    def has_pause_permission(self, request) -> bool:
        return request.user.has_perm("tasks.pause_tenants")

    def has_delete_permission(self, request, obj=None) -> bool:
        # Deleting a paused tenant's row would resume it without an audit entry: resume it first.
        return super().has_delete_permission(request, obj) and not (obj is not None and obj.paused)

    def get_readonly_fields(self, request, obj=None):
        # The tenant id is the row's key (and the claim's lock): fixed once the row exists.
        return (*self.readonly_fields, "tenant_id") if obj is not None else self.readonly_fields

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(tenant_id=term) if term else queryset), False

    @admin.display(description="max running jobs")
    def running_jobs_limit(self, obj: TenantLimits) -> str:
        return _effective(obj.max_running_jobs, settings.TENANT_MAX_RUNNING_JOBS)

    @admin.display(description="max active tasks")
    def active_tasks_limit(self, obj: TenantLimits) -> str:
        return _effective(obj.max_active_tasks, settings.TENANT_MAX_ACTIVE_TASKS)

    @admin.display(description="paused", ordering="paused")
    def pause_state(self, obj: TenantLimits):
        if not obj.paused:
            return "—"
        since = f"{obj.paused_at:%Y-%m-%d %H:%M:%S} UTC" if obj.paused_at else "?"
        return format_html(
            '<strong class="tenant-paused" style="color: #c62828">PAUSED</strong> since {} by {}: {}',
            since,
            obj.paused_by,
            obj.paused_reason,
        )

    # --- pause and resume ---
    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("pause/", view(self.pause_view), name="tasks_tenantlimits_pause"),
            path("<path:object_id>/resume/", view(require_POST(self.resume_view)), name="tasks_tenantlimits_resume"),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "has_pause_permission": self.has_pause_permission(request)}
        return super().changelist_view(request, extra_context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "has_pause_permission": self.has_pause_permission(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    def pause_view(self, request):
        """The pause form: a tenant id (its limits row is created if it has none) and a reason."""
        if not self.has_pause_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            form = TenantPauseForm(request.POST)
            if form.is_valid():
                tenant_id, reason = form.cleaned_data["tenant_id"], form.cleaned_data["reason"]
                # The change and its audit entry commit together.
                with transaction.atomic():
                    paused = pausing.tenant_pause(
                        tenant_id=tenant_id, paused_by=request.user.get_username(), reason=reason
                    )
                    if paused:
                        self._log(request, [tenant_id], PAUSE_LOG_MESSAGE.format(reason=reason.strip()))
                self._report_pause(request, tenant_id, paused)
                return self._back_to_tenant(tenant_id)
        else:
            form = TenantPauseForm(initial={"tenant_id": request.GET.get("tenant", "")})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Pause a tenant",
            "form": form,
        }
        return TemplateResponse(request, "admin/tasks/tenantlimits/pause.html", context)

    def resume_view(self, request, object_id):
        """A tenant's page's button: resume it."""
        if not self.has_pause_permission(request):
            raise PermissionDenied
        tenant_id = unquote(object_id)
        with transaction.atomic():
            resumed = pausing.tenant_resume(tenant_id=tenant_id)
            if resumed:
                self._log(request, [tenant_id], RESUME_LOG_MESSAGE)
        if resumed:
            self.message_user(request, _resumed_text(tenant_id), messages.SUCCESS)
        else:
            self.message_user(request, f"Tenant {tenant_id} is not paused: nothing to do.", messages.WARNING)
        return self._back_to_tenant(tenant_id)

    @admin.action(description="Resume selected tenants", permissions=["pause"])
    def resume_selected(self, request, queryset):
        tenants = list(queryset.values_list("tenant_id", flat=True)[: settings.ADMIN_BULK_RETRY_LIMIT])
        with transaction.atomic():
            resumed = [tenant for tenant in tenants if pausing.tenant_resume(tenant_id=tenant)]
            self._log(request, resumed, RESUME_LOG_MESSAGE)
        level = messages.SUCCESS if len(resumed) == len(tenants) else messages.WARNING
        self.message_user(request, f"Resumed {len(resumed)}; not paused {len(tenants) - len(resumed)}.", level)

    @staticmethod
    def _log(request, tenant_ids: list[str], message: str) -> None:
        """One admin log entry per tenant (who, when, which tenant, why), in one INSERT."""
        if tenant_ids:
            LogEntry.objects.log_actions(
                user_id=request.user.pk,
                queryset=[TenantLimits(tenant_id=tenant) for tenant in tenant_ids],
                action_flag=CHANGE,
                change_message=message,
            )

    def _report_pause(self, request, tenant_id: str, paused: bool) -> None:
        if not paused:
            current = pausing.tenant_pause_get(tenant_id=tenant_id)
            since = f" since {current.paused_at:%Y-%m-%d %H:%M:%S} UTC by {current.paused_by}" if current else ""
            text = f"Tenant {tenant_id} was already paused{since}: nothing changed."
            self.message_user(request, text, messages.WARNING)
            return
        text = (
            f"Paused tenant {tenant_id}: its tasks make no new jobs and its pending jobs wait until it is resumed;"
            " jobs already running finish."
        )
        if pausing.tenant_has_tasks(tenant_id=tenant_id):
            self.message_user(request, text, messages.SUCCESS)
        else:
            self.message_user(request, f"{text} No task has this tenant id: check it.", messages.WARNING)

    def _back_to_tenant(self, tenant_id: str):
        url = reverse("admin:tasks_tenantlimits_changelist")
        return HttpResponseRedirect(f"{url}?{urlencode({'q': tenant_id})}")


def _resumed_text(tenant_id: str) -> str:
    return (
        f"Resumed tenant {tenant_id}: its pending jobs are claimed again, and its tasks' missed runs follow"
        " each task's missed-runs policy."
    )


def _effective(override: int | None, default: int) -> str:
    if override is not None:
        return str(override)
    return f"default ({default})" if default else "default (no limit)"
