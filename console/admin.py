"""The console's admin pages, registered when the admin autodiscovers `console.admin`, and its name."""

from django.contrib import admin

from console.calendar_admin import CalendarAdmin
from console.job_admin import DeadJobAdmin, JobAdmin
from console.notification_admin import NotificationDeliveryAdmin, NotificationSubscriptionAdmin
from console.rate_limit_admin import OriginBucketAdmin, RateLimitAdmin
from console.task_admin import TaskAdmin, TenantLimitsAdmin
from console.task_change_admin import TaskChangeAdmin

__all__ = [
    "CalendarAdmin",
    "DeadJobAdmin",
    "JobAdmin",
    "NotificationDeliveryAdmin",
    "NotificationSubscriptionAdmin",
    "OriginBucketAdmin",
    "RateLimitAdmin",
    "TaskAdmin",
    "TaskChangeAdmin",
    "TenantLimitsAdmin",
]

CONSOLE_NAME = "jobsched support console"
admin.site.site_header = CONSOLE_NAME
admin.site.site_title = CONSOLE_NAME
admin.site.index_title = "Support console"
