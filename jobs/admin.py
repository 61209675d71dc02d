"""Jobs in the admin (read-only until the support console lands)."""

from django.contrib import admin

from jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "tenant_id", "status", "scheduled_at", "attempt", "http_status")
    list_filter = ("status",)
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
