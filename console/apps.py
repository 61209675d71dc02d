from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The support console: admin pages, dashboard, charts, bulk actions and their templates.

    No models: the permissions and content types it checks belong to the jobs and tasks
    models, so admin URLs (/admin/jobs/..., /admin/tasks/...) and groups stay as they were.
    Listed before django.contrib.admin so its admin/ templates (the index) win.
    """

    name = "console"
    verbose_name = "Support console"
