"""Tasks in the admin: find them, and pause or resume them through the task services.

Fields are read-only here (edits go through the tenant API, which validates the
schedule and the egress policy); pause/resume need tasks.change_task and bump
the version like the API does. next_run_at and version are never editable.
"""

from __future__ import annotations

import functools

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, LogEntry

from jobsched_project.admin_base import BoundedReadOnlyAdmin, InputListFilter, masked_headers_block, preformatted
from jobsched_project.masking import mask_body, mask_url
from jobsched_project.tenants import MAX_TENANT_ID_LENGTH, TENANT_ID_CHARACTERS, is_valid_tenant_id
from tasks import limits, services
from tasks.models import Task, TenantLimits


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


PAUSED_BY_SUPPORT = "paused by support staff"


@admin.register(Task)
class TaskAdmin(BoundedReadOnlyAdmin):
    list_display = (
        "name",
        "tenant_id",
        "status",
        "paused_reason",
        "schedule",
        "next_run_at",
        "last_run_status",
        "consecutive_failures",
        "updated_at",
    )
    list_filter = (TaskTenantFilter, "status")
    search_fields = ("name",)  # shows the search box; the search itself is get_search_results
    search_help_text = "A task id (exact UUID), or text in the name."
    text_search = "name__icontains"
    ordering = ("-id",)
    actions = ["pause_selected", "resume_selected"]

    readonly_fields = ("schedule", "masked_http_url", "masked_http_headers", "masked_http_body")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "tenant_id",
                    "name",
                    "status",
                    "paused_reason",
                    "version",
                    "created_at",
                    "updated_at",
                    "deleted_at",
                )
            },
        ),
        ("Schedule", {"fields": ("schedule", "next_run_at", "priority", "missed_runs")}),
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
    )

    def has_pause_permission(self, request) -> bool:
        return request.user.has_perm("tasks.change_task")

    @admin.display(description="schedule")
    def schedule(self, obj: Task) -> str:
        if obj.run_at is not None:
            return f"once at {obj.run_at:%Y-%m-%d %H:%M:%S} UTC"
        return f"{obj.cron_expression} ({obj.timezone})"

    @admin.display(description="URL")
    def masked_http_url(self, obj: Task) -> str:
        return mask_url(obj.http_url)

    @admin.display(description="headers")
    def masked_http_headers(self, obj: Task):
        return masked_headers_block(obj.http_headers)

    @admin.display(description="body")
    def masked_http_body(self, obj: Task):
        return preformatted(mask_body(obj.http_body))

    @admin.action(description="Pause selected tasks", permissions=["pause"])
    def pause_selected(self, request, queryset):
        self._apply(request, queryset, "pause")

    @admin.action(description="Resume selected tasks (at their next future run)", permissions=["pause"])
    def resume_selected(self, request, queryset):
        self._apply(request, queryset, "resume")

    def _apply(self, request, queryset, verb: str) -> None:
        call = (
            functools.partial(services.task_pause, reason=PAUSED_BY_SUPPORT)
            if verb == "pause"
            else services.task_resume
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
        value = self.cleaned_data["tenant_id"]
        if not is_valid_tenant_id(value):
            raise forms.ValidationError(f"A tenant id is 1-{MAX_TENANT_ID_LENGTH} of {TENANT_ID_CHARACTERS}.")
        return value


@admin.register(TenantLimits)
class TenantLimitsAdmin(admin.ModelAdmin):
    """Per-tenant overrides of the limits (tasks.add/change/delete_tenantlimits); empty = the setting."""

    form = TenantLimitsForm

    list_display = ("tenant_id", "running_jobs_limit", "active_tasks_limit", "note", "updated_at")
    search_fields = ("tenant_id",)
    search_help_text = "A tenant id, exact."
    ordering = ("tenant_id",)
    fields = ("tenant_id", "max_running_jobs", "max_active_tasks", "note", "updated_at")
    readonly_fields = ("updated_at",)
    list_per_page = 50
    show_full_result_count = False

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


def _effective(override: int | None, default: int) -> str:
    if override is not None:
        return str(override)
    return f"default ({default})" if default else "default (no limit)"
