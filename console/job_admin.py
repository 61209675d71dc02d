"""The dead-letter console for support staff, and a read-only view of every job.

Viewing needs jobs.view_deadjob; retrying needs jobs.retry_dead_jobs and the
view permission too (the "support" group has both): nobody changes a job they
may not see, on its page, in a bulk action or through retry-matching. Every retry goes through `jobs.services.job_retry`
(one guarded UPDATE) and is recorded in the admin log. List pages never count a
large table whole (CappedCountPaginator, no full count, no facets) and never
query per row (the task name comes from a subquery of the same statement).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_POST

from console import dead_letters
from console.admin_base import BoundedReadOnlyAdmin, InputListFilter, masked_headers_block, preformatted
from console.dashboard_page import dashboard_view
from domain.attempt_log import read_attempts
from domain.ids import parse_id
from domain.masking import mask_body, mask_url
from jobs import services
from jobs.models import DeadJob, Job, JobStatus
from tasks.labels import read_labels
from tasks.models import Task

RETRY_LOG_MESSAGE = "Retried from the dead-letter console: requeued"
ATTEMPT_LOG_COLUMNS = ("attempt", "started", "finished", "took", "then", "HTTP status", "error")
CANCEL_LOG_MESSAGE = "Cancelled from the support console: will not run"
DISCARD_LOG_MESSAGE = "Discarded from the dead-letter console: left the DLQ for good"


def _instant(value: datetime | None) -> str:
    """An attempt's time to the millisecond, UTC (the log keeps milliseconds)."""
    return "—" if value is None else f"{value:%Y-%m-%d %H:%M:%S}.{value.microsecond // 1000:03d} UTC"


class TenantFilter(InputListFilter):
    title = "tenant"
    parameter_name = "tenant"
    placeholder = "tenant id"

    def lookups(self, request, model_admin):
        return [(row.tenant_id, row.tenant_id) for row in dead_letters.dead_summary_for(request).tenants]

    def queryset(self, request, queryset):
        return queryset.filter(tenant_id=self.value()) if self.value() else queryset


class TaskFilter(InputListFilter):
    title = "task"
    parameter_name = "task"
    placeholder = "task id"
    offered = 20

    def lookups(self, request, model_admin):
        tenant = request.GET.get(TenantFilter.parameter_name)
        if not tenant:
            return []
        # DISTINCT ... LIMIT stops after `offered` tasks: bounded even for a huge tenant DLQ.
        task_ids = list(
            DeadJob.objects.filter(tenant_id=tenant)
            .order_by()
            .values_list("task_id", flat=True)
            .distinct()[: self.offered]
        )
        if not task_ids:
            return []
        names = Task.objects.filter(pk__in=task_ids).order_by("name").values_list("pk", "name")
        return [(str(pk), f"{name} ({str(pk)[:8]}…)") for pk, name in names]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        task_id = parse_id(self.value())
        return queryset.filter(task_id=task_id) if task_id else queryset.none()


class HttpStatusClassFilter(admin.SimpleListFilter):
    title = "last HTTP status"
    parameter_name = "http"
    classes = {"2xx": 200, "3xx": 300, "4xx": 400, "5xx": 500}

    def lookups(self, request, model_admin):
        return [*((name, name) for name in self.classes), ("none", "none (timeout, connection error)")]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "none":
            return queryset.filter(http_status__isnull=True)
        if value in self.classes:
            low = self.classes[value]
            return queryset.filter(http_status__gte=low, http_status__lt=low + 100)
        return queryset


class AgeFilter(admin.SimpleListFilter):
    """How long ago the job died (finished_at)."""

    title = "died"
    parameter_name = "age"
    ranges = {
        "1h": ("in the last hour", None, timedelta(hours=1)),
        "1d": ("1 to 24 hours ago", timedelta(hours=1), timedelta(days=1)),
        "7d": ("1 to 7 days ago", timedelta(days=1), timedelta(days=7)),
        "older": ("more than 7 days ago", timedelta(days=7), None),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _, _) in self.ranges.items()]

    def queryset(self, request, queryset):
        if self.value() not in self.ranges:
            return queryset
        _, older_than, newer_than = self.ranges[self.value()]
        now = timezone.now()
        if older_than is not None:
            queryset = queryset.filter(finished_at__lte=now - older_than)
        if newer_than is not None:
            queryset = queryset.filter(finished_at__gt=now - newer_than)
        return queryset


def with_task_name(queryset):
    """Annotate each job with its task's name in the same query (no per-row query).

    A correlated subquery rather than select_related: the FK has no constraint, and an
    INNER JOIN would silently hide a job whose task row is gone. It names the tenant too (a
    job's task is its tenant's): behind vtgate that keeps the subquery on the job's shard.
    """
    task = Task.objects.filter(pk=OuterRef("task_id"), tenant_id=OuterRef("tenant_id"))
    return queryset.annotate(task_name=Subquery(task.values("name")[:1]))


class JobPagesAdmin(BoundedReadOnlyAdmin):
    """What both job admins show: the task's name without a per-row query, and the request with credentials masked."""

    id_search_fields = ("pk", "task_id")
    readonly_fields = (
        "attempt_log_table",
        "task_link",
        "masked_request_url",
        "masked_request_headers",
        "masked_request_body",
        "secret_ref_name",
        "response_body_text",
        "labels_shown",
    )
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "id",
                    "tenant_id",
                    "task_link",
                    "status",
                    "scheduled_at",
                    "labels_shown",
                    ("attempt", "max_attempts"),
                    "priority",
                    ("started_at", "finished_at"),
                    "worker_id",
                )
            },
        ),
        (
            "Request sent (credentials masked)",
            {
                "fields": (
                    "request_method",
                    "masked_request_url",
                    "masked_request_headers",
                    "masked_request_body",
                    "secret_ref_name",
                )
            },
        ),
        ("Response kept", {"fields": ("http_status", "error", "response_body_text")}),
        ("Attempts (the last 20, newest first)", {"fields": ("attempt_log_table",)}),
    )

    def get_queryset(self, request):
        return with_task_name(super().get_queryset(request))

    @admin.display(description="labels (the task's, when the job was made)")
    def labels_shown(self, obj: Job):
        labels = read_labels(obj.labels)
        if not labels:
            return "—"
        return format_html_join("", '<span class="task-label">{}={}</span> ', sorted(labels.items()))

    @admin.display(description="task", ordering="task_name")
    def task_name(self, obj) -> str:
        return obj.task_name or "(task gone)"

    @admin.display(description="task")
    def task_link(self, obj):
        url = reverse("admin:tasks_task_change", args=[obj.task_id])
        return format_html('<a href="{}">{}</a> ({})', url, self.task_name(obj), obj.task_id)

    @admin.display(description="URL")
    def masked_request_url(self, obj: Job) -> str:
        return mask_url(obj.request_url)

    @admin.display(description="headers")
    def masked_request_headers(self, obj: Job):
        return masked_headers_block(obj.request_headers)

    @admin.display(description="body")
    def masked_request_body(self, obj: Job):
        return preformatted(mask_body(obj.request_body))

    @admin.display(description="secret reference")
    def secret_ref_name(self, obj: Job) -> str:
        # The name of the secret only: the console never resolves it.
        return obj.secret_ref or "—"

    @admin.display(description="attempt log")
    def attempt_log_table(self, obj: Job):
        entries = read_attempts(obj.attempts)
        if not entries:
            return "—"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    entry.attempt,
                    _instant(entry.started_at),
                    _instant(entry.finished_at),
                    "—" if entry.duration_ms is None else f"{entry.duration_ms} ms",
                    entry.status,
                    entry.http_status or "—",
                    entry.error or "—",
                )
                for entry in reversed(entries)
            ),
        )
        head = format_html(
            "<tr>{}</tr>", format_html_join("", "<th>{}</th>", ((name,) for name in ATTEMPT_LOG_COLUMNS))
        )
        return format_html('<table id="attempt-log"><thead>{}</thead><tbody>{}</tbody></table>', head, rows)

    @admin.display(description="response body (truncated, credentials masked)")
    def response_body_text(self, obj: Job):
        # What the tenant's endpoint answered may carry its own credentials (an access_token, a signed URL).
        return preformatted(mask_body(obj.response_body))

    # --- guarded changes shared by cancel (JobAdmin) and discard (DeadJobAdmin) ---
    @staticmethod
    def selected_ids(request, queryset) -> list[uuid.UUID]:
        """The ids an action applies to: every match (up to the limit + 1) or the ids as ticked."""
        if request.POST.get("select_across") == "1":
            # One more than the limit tells whether jobs were left over; ids only, no row bodies.
            return list(queryset.values_list("pk", flat=True)[: settings.ADMIN_BULK_RETRY_LIMIT + 1])
        # The ids as ticked, not `queryset` (already narrowed by the filters): a job changed or
        # archived since the page was drawn must be reported, not silently dropped.
        ticked = (parse_id(value) for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME))
        return list(dict.fromkeys(job_id for job_id in ticked if job_id is not None))

    @staticmethod
    def log_changes(request, job_ids: list[uuid.UUID], *, status: str, message: str) -> None:
        """One admin log entry per changed job (who, when, which job), in one INSERT."""
        if not job_ids:
            return
        # Logged against Job (not the proxy) so the entry's link still works whatever the job's status.
        LogEntry.objects.log_actions(
            user_id=request.user.pk,
            queryset=[Job(pk=job_id, status=status) for job_id in job_ids],
            action_flag=CHANGE,
            change_message=message,
        )

    def change_in_bulk(self, request, job_ids, *, change, message: str, verb: str, state: str) -> None:
        tally = dead_letters.ChangeTally()
        try:
            dead_letters.change_each(job_ids, change=change, limit=settings.ADMIN_BULK_RETRY_LIMIT, tally=tally)
        finally:
            # Even if one change fails midway, the ones already made are in the audit log.
            self.log_changes(request, tally.done, status=JobStatus.CANCELLED, message=message)
        clean = tally.gone == 0 and tally.wrong_status == 0 and not tally.left_over
        self.message_user(
            request, tally.summary(verb=verb, state=state), messages.SUCCESS if clean else messages.WARNING
        )

    def change_one(self, request, object_id, *, change, message: str, done: str, state: str) -> None:
        job_id = parse_id(unquote(object_id))
        if job_id is None:
            raise Http404("not a job id")
        outcome = change(job_id=job_id, tenant_id=None)
        if outcome is services.ChangeOutcome.DONE:
            self.log_changes(request, [job_id], status=JobStatus.CANCELLED, message=message)
            self.message_user(request, f"Job {job_id} {done}.", messages.SUCCESS)
        elif outcome is services.ChangeOutcome.GONE:
            self.message_user(request, f"Job {job_id} is already gone (archived or never existed).", messages.WARNING)
        else:
            self.message_user(request, f"Job {job_id} is no longer {state}: nothing to do.", messages.WARNING)

    def back_to_changelist(self, request):
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        preserved = {"preserved_filters": self.get_preserved_filters(request), "opts": self.opts}
        return HttpResponseRedirect(add_preserved_filters(preserved, url))


@admin.register(DeadJob)
class DeadJobAdmin(JobPagesAdmin):
    list_display = (
        "id",
        "tenant_id",
        "task_name",
        "scheduled_at",
        "attempt",
        "http_status",
        "error_excerpt",
        "finished_at",
    )
    list_filter = (TenantFilter, TaskFilter, HttpStatusClassFilter, AgeFilter)
    search_fields = ("error",)  # shows the search box; the search itself is get_search_results
    search_help_text = "A job id or task id (exact UUID), or text in the error."
    text_search = "error__icontains"
    ordering = ("-finished_at",)
    actions = ["retry_selected", "discard_selected"]

    def has_retry_permission(self, request) -> bool:
        """Retrying is its own permission, on top of viewing: staff who may only view see the console read-only."""
        return request.user.has_perm("jobs.retry_dead_jobs") and self.has_view_permission(request)

    def has_discard_permission(self, request) -> bool:
        """Discarding is its own permission too (on top of viewing): it removes a job from the DLQ for good."""
        return request.user.has_perm("jobs.discard_dead_jobs") and self.has_view_permission(request)

    @admin.display(description="error")
    def error_excerpt(self, obj: DeadJob) -> str:
        error = obj.error or ""
        return error if len(error) <= 80 else error[:79] + "…"

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {
            **(extra_context or {}),
            "has_retry_permission": self.has_retry_permission(request),
            "has_discard_permission": self.has_discard_permission(request),
        }
        return super().change_view(request, object_id, form_url, extra_context)

    def changelist_view(self, request, extra_context=None):
        extra_context = {
            "title": "Dead-letter queue: dead jobs of every tenant",
            **(extra_context or {}),
            "has_retry_permission": self.has_retry_permission(request),
            "bulk_retry_limit": settings.ADMIN_BULK_RETRY_LIMIT,
            "retry_matching_url": reverse("admin:jobs_deadjob_retry_matching")
            + (f"?{request.GET.urlencode()}" if request.GET else ""),
        }
        return super().changelist_view(request, extra_context)

    # --- retry ---
    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("retry-matching/", view(require_POST(self.retry_matching_view)), name="jobs_deadjob_retry_matching"),
            path("<path:object_id>/retry/", view(require_POST(self.retry_view)), name="jobs_deadjob_retry"),
            path("<path:object_id>/discard/", view(require_POST(self.discard_view)), name="jobs_deadjob_discard"),
            *super().get_urls(),
        ]

    @admin.action(description="Retry selected dead jobs", permissions=["retry"])
    def retry_selected(self, request, queryset):
        if request.POST.get("select_across") == "1":
            job_ids = self._ids_up_to_limit(queryset)
        else:
            # The ids as ticked, not `queryset` (already narrowed to dead jobs): a job retried or
            # archived since the page was drawn must be reported, not silently dropped.
            ticked = (parse_id(value) for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME))
            job_ids = list(dict.fromkeys(job_id for job_id in ticked if job_id is not None))
        self._retry_ids(request, job_ids)

    @admin.action(description="Discard selected dead jobs (they will never run)", permissions=["discard"])
    def discard_selected(self, request, queryset):
        job_ids = self.selected_ids(request, queryset)
        self.change_in_bulk(
            request, job_ids, change=services.job_discard, message=DISCARD_LOG_MESSAGE, verb="Discarded", state="dead"
        )

    def discard_view(self, request, object_id):
        """The detail page's button: discard one dead job."""
        if not self.has_discard_permission(request):
            raise PermissionDenied
        self.change_one(
            request, object_id, change=services.job_discard, message=DISCARD_LOG_MESSAGE, done="discarded", state="dead"
        )
        return self.back_to_changelist(request)

    def retry_view(self, request, object_id):
        """The detail page's button: retry one job."""
        if not self.has_retry_permission(request):
            raise PermissionDenied
        job_id = parse_id(unquote(object_id))
        if job_id is None:
            raise Http404("not a job id")
        outcome = services.job_retry(job_id=job_id, tenant_id=None)
        if outcome is services.RetryOutcome.REQUEUED:
            self._log_retries(request, [job_id])
            self.message_user(request, f"Job {job_id} requeued.", messages.SUCCESS)
        elif outcome is services.RetryOutcome.GONE:
            self.message_user(request, f"Job {job_id} is already gone (archived or never existed).", messages.WARNING)
        elif outcome in (services.RetryOutcome.TASK_PAUSED, services.RetryOutcome.TASK_DELETED):
            state = "paused" if outcome is services.RetryOutcome.TASK_PAUSED else "deleted"
            self.message_user(request, f"Job {job_id} not requeued: its task is {state}.", messages.WARNING)
        else:
            self.message_user(request, f"Job {job_id} is no longer dead: nothing to do.", messages.WARNING)
        return self._back_to_changelist(request)

    def retry_matching_view(self, request):
        """Retry every dead job the current filters and search match, up to the per-request limit."""
        if not self.has_retry_permission(request):
            raise PermissionDenied
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            self.message_user(request, "Those filters are not valid: nothing retried.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:jobs_deadjob_changelist"))
        self._retry_ids(request, self._ids_up_to_limit(changelist.get_queryset(request)))
        query = request.GET.urlencode()
        return HttpResponseRedirect(reverse("admin:jobs_deadjob_changelist") + (f"?{query}" if query else ""))

    @staticmethod
    def _ids_up_to_limit(queryset) -> list[uuid.UUID]:
        # One more than the limit tells whether jobs were left over; ids only, no row bodies.
        return list(queryset.values_list("pk", flat=True)[: settings.ADMIN_BULK_RETRY_LIMIT + 1])

    def _retry_ids(self, request, job_ids: list[uuid.UUID]) -> None:
        limit = settings.ADMIN_BULK_RETRY_LIMIT
        tally = dead_letters.RetryTally()
        dead_letters.retry_paced(job_ids, per_second=settings.ADMIN_BULK_RETRY_PER_SECOND, limit=limit, tally=tally)
        # One transaction requeued them all (or none): every requeued job gets its audit entry.
        self._log_retries(request, tally.requeued)
        clean = tally.gone == 0 and tally.not_dead == 0 and not tally.left_over
        self.message_user(request, tally.summary(), messages.SUCCESS if clean else messages.WARNING)

    def _log_retries(self, request, job_ids: list[uuid.UUID]) -> None:
        """One admin log entry per requeued job (who, when, which job), in one INSERT."""
        if not job_ids:
            return
        # Logged against Job (not the proxy) so the entry's link still works once the job is no longer dead.
        LogEntry.objects.log_actions(
            user_id=request.user.pk,
            queryset=[Job(pk=job_id, status=JobStatus.PENDING) for job_id in job_ids],
            action_flag=CHANGE,
            change_message=RETRY_LOG_MESSAGE,
        )

    def _back_to_changelist(self, request):
        url = reverse("admin:jobs_deadjob_changelist")
        preserved = {"preserved_filters": self.get_preserved_filters(request), "opts": self.opts}
        return HttpResponseRedirect(add_preserved_filters(preserved, url))


@admin.register(Job)
class JobAdmin(JobPagesAdmin):
    """Every job, read-only (the retry lives in the dead-job console)."""

    list_display = ("id", "tenant_id", "task_name", "status", "scheduled_at", "attempt", "http_status")
    list_filter = ("status", HttpStatusClassFilter)
    search_fields = ("tenant_id",)  # shows the search box; the search itself is get_search_results
    search_help_text = "A job id or task id (exact UUID), or a tenant id."
    text_search = "tenant_id"
    ordering = ("-id",)
    actions = ["cancel_selected"]

    def has_cancel_permission(self, request) -> bool:
        """Cancelling is its own permission (on top of viewing): a cancelled job never runs."""
        return request.user.has_perm("jobs.cancel_pending_jobs") and self.has_view_permission(request)

    def get_urls(self):
        view = self.admin_site.admin_view
        dashboard = view(partial(dashboard_view, site=self.admin_site))
        return [
            path("dashboard/", dashboard, name="jobs_dashboard"),
            path("<path:object_id>/cancel/", view(require_POST(self.cancel_view)), name="jobs_job_cancel"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "has_cancel_permission": self.has_cancel_permission(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.action(description="Cancel selected pending jobs (they will never run)", permissions=["cancel"])
    def cancel_selected(self, request, queryset):
        job_ids = self.selected_ids(request, queryset)
        self.change_in_bulk(
            request, job_ids, change=services.job_cancel, message=CANCEL_LOG_MESSAGE, verb="Cancelled", state="pending"
        )

    def cancel_view(self, request, object_id):
        """The detail page's button: cancel one pending job."""
        if not self.has_cancel_permission(request):
            raise PermissionDenied
        self.change_one(
            request,
            object_id,
            change=services.job_cancel,
            message=CANCEL_LOG_MESSAGE,
            done="cancelled",
            state="pending",
        )
        return self.back_to_changelist(request)
