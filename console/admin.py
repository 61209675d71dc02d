"""The console's admin pages, registered when the admin autodiscovers `console.admin`."""

from console.job_admin import DeadJobAdmin, JobAdmin
from console.task_admin import TaskAdmin, TenantLimitsAdmin

__all__ = ["DeadJobAdmin", "JobAdmin", "TaskAdmin", "TenantLimitsAdmin"]
