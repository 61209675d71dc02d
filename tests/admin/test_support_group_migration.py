"""The "support" group comes from a migration; the jobs app's migrations match its models."""

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command


@pytest.mark.django_db
def test_migrations_create_the_support_group_with_view_retry_cancel_discard_and_pause_permissions():
    group = Group.objects.get(name="support")

    granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}

    assert granted == {
        "jobs.view_deadjob",
        "jobs.view_job",
        "jobs.retry_dead_jobs",
        "jobs.cancel_pending_jobs",
        "jobs.discard_dead_jobs",
        "tasks.view_task",
        "tasks.view_tenantlimits",
        "tasks.pause_tenants",
        "tasks.view_taskchange",  # the audit trail of tasks, read-only
        "notifications.view_notificationsubscription",
        "notifications.view_notificationevent",
    }


@pytest.mark.django_db
def test_the_jobs_app_has_no_unmade_migrations():
    call_command("makemigrations", "jobs", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db
def test_the_tasks_app_has_no_unmade_migrations():
    call_command("makemigrations", "tasks", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db
def test_the_notifications_app_has_no_unmade_migrations():
    call_command("makemigrations", "notifications", "--check", "--dry-run", verbosity=0)
