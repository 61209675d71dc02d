"""Shared by the admin and browser tests: support users and dead jobs."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.contrib.auth.models import Group, Permission, User
from django.utils import timezone

from jobs.models import Job, JobStatus
from tasks.models import Task
from tests.factories import make_job

PASSWORD = "correct horse battery staple"


def support_group() -> Group:
    """The group the migration creates (re-created here: a transactional test's flush removes data rows)."""
    migration = importlib.import_module("jobs.migrations.0003_support_group")
    migration.create_support_group(apps, None)
    importlib.import_module("jobs.migrations.0005_cancel_and_discard_permissions").grant(apps, None)
    importlib.import_module("tasks.migrations.0006_tenant_pause").grant(apps, None)
    importlib.import_module("tasks.migrations.0008_task_changes").grant(apps, None)
    importlib.import_module("notifications.migrations.0002_support_view_permissions").grant(apps, None)
    return Group.objects.get(name=migration.GROUP_NAME)


def make_staff(
    username: str, *, groups: tuple[Group, ...] = (), perms: tuple[str, ...] = (), staff: bool = True
) -> User:
    """A user with a usable password, in `groups`, with extra `perms` ("app_label.codename")."""
    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff)
    user.groups.add(*groups)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return user


def make_dead_job(task: Task, *, died_ago: timedelta = timedelta(minutes=5), **overrides: Any) -> Job:
    """A job of `task` that ran out of attempts `died_ago`."""
    finished_at = timezone.now() - died_ago
    fields: dict[str, Any] = {
        "scheduled_at": finished_at - timedelta(minutes=30),
        "status": JobStatus.DEAD,
        "attempt": task.max_attempts,
        "http_status": 503,
        "error": "HTTP 503 from the endpoint",
        "response_body": "upstream unavailable",
        "started_at": finished_at - timedelta(seconds=2),
        "finished_at": finished_at,
    }
    fields.update(overrides)
    return make_job(task, **fields)
