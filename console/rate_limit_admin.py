"""Rate limits in the console: read-only, with each origin's shared bucket beside it.

Tenants set their limits through the API (ratelimits.services is their one writer);
support reads them here, with what the executors' claims did with them: calls granted,
when the last held-back job comes due, and any Retry-After block in force.
"""

from __future__ import annotations

from django.contrib import admin

from ratelimits.models import OriginBucket, RateLimit


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        return (queryset.filter(tenant_id=term) if term else queryset), False


@admin.register(RateLimit)
class RateLimitAdmin(_ReadOnly):
    list_display = ("tenant_id", "origin", "per_second", "burst", "updated_at")
    search_fields = ("tenant_id",)
    search_help_text = "A tenant id, exact."
    ordering = ("tenant_id", "origin")
    list_per_page = 50
    show_full_result_count = False


@admin.register(OriginBucket)
class OriginBucketAdmin(_ReadOnly):
    list_display = ("tenant_id", "origin", "granted", "last_granted_for", "held_until", "blocked_until", "updated_at")
    search_fields = ("tenant_id",)
    search_help_text = "A tenant id, exact."
    ordering = ("tenant_id", "origin")
    list_per_page = 50
    show_full_result_count = False
