from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from jobs.lifecycle import on_task_stopped
        from tasks.signals import task_stopped

        task_stopped.connect(on_task_stopped, dispatch_uid="jobs.lifecycle.on_task_stopped")
