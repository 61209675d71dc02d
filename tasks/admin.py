"""Tasks in the admin (read-only until the support console lands)."""

from django.contrib import admin

from tasks.models import Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant_id", "status", "next_run_at", "version")
    list_filter = ("status",)
    search_fields = ("name", "tenant_id")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
