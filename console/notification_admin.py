"""Tenants' notification subscriptions and deliveries in the console: read-only (tenants use the API)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, Subquery

from console.admin_base import BoundedReadOnlyAdmin
from jobs.models import Job
from notifications.models import NotificationEvent, NotificationSubscription


@admin.register(NotificationSubscription)
class NotificationSubscriptionAdmin(BoundedReadOnlyAdmin):
    list_display = ("tenant_id", "url", "events_list", "failing_after", "enabled", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("tenant_id",)
    search_help_text = "A tenant id (exact)."
    id_search_fields = ()
    text_search = "tenant_id"
    ordering = ("tenant_id",)
    fields = ("tenant_id", "url", "events", "failing_after", "enabled", "created_at", "updated_at")

    @admin.display(description="events")
    def events_list(self, subscription: NotificationSubscription) -> str:
        return ", ".join(subscription.events)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(tenant_id=term), False) if term else (queryset, False)


@admin.register(NotificationEvent)
class NotificationDeliveryAdmin(BoundedReadOnlyAdmin):
    """Each event sent to a tenant, newest first, with its delivery's state while its job is in the queue."""

    list_display = ("id", "tenant_id", "event_type", "task_id", "created_at", "delivery")
    list_filter = ("event_type",)
    search_fields = ("tenant_id",)
    search_help_text = "An event id (exact UUID) or a tenant id (exact)."
    id_search_fields = ("pk",)
    text_search = "tenant_id"
    ordering = ("-created_at",)
    fields = ("id", "tenant_id", "event_type", "event_key", "task_id", "created_at", "delivery")
    readonly_fields = ("delivery",)

    def get_queryset(self, request):
        # Each row's delivery from its job (one primary-key lookup per row of the page) while it is in the queue.
        job = Job.objects.filter(id=OuterRef("pk"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                delivery_status=Subquery(job.values("status")[:1]),
                delivery_attempts=Subquery(job.values("attempt")[:1]),
                delivery_http_status=Subquery(job.values("http_status")[:1]),
            )
        )

    @admin.display(description="delivery")
    def delivery(self, event: NotificationEvent) -> str:
        status = getattr(event, "delivery_status", None)
        if status is None:
            return "archived (see the tenant's deliveries)"
        http_status = event.delivery_http_status  # type: ignore[attr-defined]  # annotated by get_queryset
        shown = http_status if http_status is not None else "-"
        return f"{status}, {event.delivery_attempts} attempt(s), HTTP {shown}"  # type: ignore[attr-defined]  # annotated
