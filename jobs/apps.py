from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from database.dbconv import install_fast_datetimes
        from jobs.task_stopped import on_task_stopped
        from tasks.signals import task_stopped

        task_stopped.connect(on_task_stopped, dispatch_uid="jobs.task_stopped.on_task_stopped")
        # Every connection of the process, the executor's claim and result threads' included.
        connection_created.connect(install_fast_datetimes, dispatch_uid="database.dbconv")
