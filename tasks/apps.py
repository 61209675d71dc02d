from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Tasks"

    def ready(self) -> None:
        # Parse EGRESS_ALLOWLIST at start: a bad value stops the process naming the setting.
        from tasks.targets import egress_policy

        egress_policy()
