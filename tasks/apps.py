from django.apps import AppConfig
from django.conf import settings
from django.core.management import call_command
from django.db.models.signals import post_migrate


def _create_cache_tables(sender, using: str = "default", verbosity: int = 1, **kwargs) -> None:
    """`migrate` creates the throttle's cache table (idempotent; nothing for a non-database cache)."""
    call_command("createcachetable", database=using, verbosity=verbosity)


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        # Parse EGRESS_ALLOWLIST at start: a bad value stops the process naming the setting.
        if settings.EGRESS_POLICY_AT_START:
            from tasks.targets import egress_policy

            egress_policy()
        if settings.URL_CHECK_AT_START:
            from outbound.egress.url_rules import parse_task_url

            parse_task_url("https://example.com/")  # imports both URL parsers now, not at the first check
        post_migrate.connect(_create_cache_tables, sender=self, dispatch_uid="tasks.create_cache_tables")
