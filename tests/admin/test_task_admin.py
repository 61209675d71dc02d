"""Tasks in the admin: find, filter, pause and resume through the task services."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.urls import reverse
from django.utils import timezone

from tasks import services
from tasks.models import Task, TaskLabel, TaskStatus
from tests.admin.support import make_staff
from tests.factories import make_task

CHANGELIST = reverse("admin:tasks_task_changelist")

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(db):
    """Staff who may change tasks (pause/resume); the support group may not."""
    return make_staff("operator", perms=("tasks.view_task", "tasks.change_task"))


def listed(response) -> set[str]:
    return {str(task.pk) for task in response.context["cl"].result_list}


def fresh(task: Task) -> Task:
    return Task.objects.get(pk=task.pk)


def test_tasks_are_filtered_by_tenant_and_status(support_user, client_as):
    active_a = make_task(tenant_id="tenant-a")
    paused_a = make_task(tenant_id="tenant-a", status=TaskStatus.PAUSED)
    active_b = make_task(tenant_id="tenant-b")
    client = client_as(support_user)

    by_tenant = client.get(CHANGELIST, {"tenant": "tenant-a"})
    by_both = client.get(CHANGELIST, {"tenant": "tenant-a", "status__exact": "paused"})

    assert listed(by_tenant) == {str(active_a.pk), str(paused_a.pk)}
    assert listed(by_both) == {str(paused_a.pk)}
    assert str(active_b.pk) not in listed(by_tenant)
    assert "?tenant=tenant-b" in by_tenant.content.decode()  # offered in the filter


def test_tasks_are_found_by_id_or_name(support_user, client_as):
    invoice = make_task(name="Invoice reminder")
    other = make_task(name="cleanup")
    client = client_as(support_user)

    assert listed(client.get(CHANGELIST, {"q": str(invoice.pk)})) == {str(invoice.pk)}
    assert listed(client.get(CHANGELIST, {"q": "Invoice"})) == {str(invoice.pk)}
    assert str(other.pk) not in listed(client.get(CHANGELIST, {"q": "Invoice"}))


def test_task_page_is_read_only_with_next_run_and_version(operator, client_as):
    task = make_task(http_headers={"X-Api-Key": "task-secret-1", "X-Trace": "shown"})

    response = client_as(operator).get(reverse("admin:tasks_task_change", args=[task.pk]))

    body = response.content.decode()
    assert response.status_code == 200
    assert response.context["adminform"].form.fields == {}  # nothing editable, next_run_at and version included
    assert "Next run at" in body and "Version" in body
    assert "task-secret-1" not in body and "shown" in body


def test_operator_pauses_a_selection_through_the_service_bumping_versions(operator, client_as):
    active = make_task()
    already_paused = make_task(status=TaskStatus.PAUSED)

    response = client_as(operator).post(
        CHANGELIST,
        {"action": "pause_selected", ACTION_CHECKBOX_NAME: [str(active.pk), str(already_paused.pk)]},
        follow=True,
    )

    assert fresh(active).status == TaskStatus.PAUSED
    assert fresh(active).paused_reason == "paused by support staff"
    assert fresh(active).version == active.version + 1
    assert fresh(already_paused).version == already_paused.version
    assert [str(m) for m in response.context["messages"]] == ["Paused 1; already paused 1; deleted or gone 0."]
    assert list(LogEntry.objects.values_list("object_id", flat=True)) == [str(active.pk)]


def test_operator_resumes_a_task_at_its_next_future_run(operator, client_as):
    long_ago = timezone.now() - timedelta(days=3)
    paused = make_task(status=TaskStatus.PAUSED, next_run_at=long_ago)

    response = client_as(operator).post(
        CHANGELIST, {"action": "resume_selected", ACTION_CHECKBOX_NAME: [str(paused.pk)]}, follow=True
    )

    after = fresh(paused)
    assert after.status == TaskStatus.ACTIVE
    assert after.version == paused.version + 1
    assert after.next_run_at > timezone.now() - timedelta(minutes=1)
    assert [str(m) for m in response.context["messages"]] == ["Resumed 1; already resumed 0; deleted or gone 0."]


def test_a_deleted_task_is_counted_as_gone(operator, client_as):
    deleted = make_task(status=TaskStatus.DELETED)

    response = client_as(operator).post(
        CHANGELIST, {"action": "pause_selected", ACTION_CHECKBOX_NAME: [str(deleted.pk)]}, follow=True
    )

    assert fresh(deleted).status == TaskStatus.DELETED
    assert [str(m) for m in response.context["messages"]] == ["Paused 0; already paused 0; deleted or gone 1."]


def test_support_staff_without_change_permission_cannot_pause(support_user, client_as):
    task = make_task()
    client = client_as(support_user)

    listing = client.get(CHANGELIST)
    client.post(CHANGELIST, {"action": "pause_selected", ACTION_CHECKBOX_NAME: [str(task.pk)]})

    assert "pause_selected" not in listing.content.decode()
    assert fresh(task).status == TaskStatus.ACTIVE


def test_the_task_list_issues_the_same_few_queries_for_3_or_60_tasks(
    support_user, client_as, django_assert_max_num_queries
):
    client = client_as(support_user)
    for n in range(3):
        make_task(tenant_id=f"tenant-{n}")
    client.get(CHANGELIST)

    with django_assert_max_num_queries(10) as few:
        client.get(CHANGELIST, {"tenant": "tenant-1"})
    for n in range(57):
        make_task(tenant_id="tenant-1", name=f"more {n}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(CHANGELIST, {"tenant": "tenant-1"})

    assert len(response.context["cl"].result_list) == 50


def test_a_task_the_tenant_keeps_editing_is_reported_not_a_server_error(operator, client_as, monkeypatch):
    paused = make_task(status=TaskStatus.PAUSED)

    def always_stale(**kwargs):
        raise services.VersionMismatch(paused.version + 1)

    # Unit-level stand-in for five lost races in a row (the real race is tested in tests/tasks).
    monkeypatch.setattr(services, "task_resume", always_stale)
    response = client_as(operator).post(
        CHANGELIST, {"action": "resume_selected", ACTION_CHECKBOX_NAME: [str(paused.pk)]}, follow=True
    )

    assert response.status_code == 200
    assert fresh(paused).status == TaskStatus.PAUSED
    assert [str(m) for m in response.context["messages"]] == [
        "Resumed 0; already resumed 0; deleted or gone 0. Being edited by the tenant, try again: 1."
    ]


@pytest.mark.django_db
def test_the_admin_shows_why_a_task_is_paused_and_how_it_is_doing(operator, client_as):
    task = make_task(status="paused", paused_reason="paused automatically after 10 dead jobs in a row")
    task.consecutive_failures = 10
    task.save(update_fields=["consecutive_failures"])
    admin_client = client_as(operator)
    listing = admin_client.get(CHANGELIST).content.decode()
    assert "paused automatically after 10 dead jobs in a row" in listing
    detail = admin_client.get(reverse("admin:tasks_task_change", args=[task.pk])).content.decode()
    assert "How it is doing" in detail and "paused automatically" in detail


def test_a_resume_over_the_tenants_active_task_limit_is_reported_not_a_server_error(operator, client_as, settings):
    settings.TENANT_MAX_ACTIVE_TASKS = 1
    make_task(tenant_id="tenant-a")  # the one active task the tenant may have
    paused = make_task(tenant_id="tenant-a", status=TaskStatus.PAUSED)

    response = client_as(operator).post(
        CHANGELIST, {"action": "resume_selected", ACTION_CHECKBOX_NAME: [str(paused.pk)]}, follow=True
    )

    assert response.status_code == 200
    assert fresh(paused).status == TaskStatus.PAUSED
    assert [str(m) for m in response.context["messages"]] == [
        "Resumed 0; already resumed 0; deleted or gone 0. Left paused, their tenant is at its active-task limit: 1."
    ]
    assert not LogEntry.objects.exists()


def _labelled(labels: dict[str, str], **fields) -> Task:
    """A task with `labels`, mirrored in task_labels as tasks.services writes them."""
    task = make_task(labels=labels, **fields)
    TaskLabel.objects.bulk_create(
        TaskLabel(task=task, tenant_id=task.tenant_id, key=key, value=value) for key, value in labels.items()
    )
    return task


def test_labels_are_listed_shown_and_filtered_by_key_and_value(support_user, client_as):
    prod = _labelled({"env": "prod", "team": "billing"}, tenant_id="tenant-a")
    staging = _labelled({"env": "staging"}, tenant_id="tenant-a")
    other_tenant = _labelled({"env": "prod"}, tenant_id="tenant-b")
    client = client_as(support_user)

    listing = client.get(CHANGELIST).content.decode()
    detail = client.get(reverse("admin:tasks_task_change", args=[prod.pk])).content.decode()

    assert 'class="field-labels_list"' in listing and "env=prod" in listing and "team=billing" in listing
    assert "env=prod" in detail and "team=billing" in detail
    assert listed(client.get(CHANGELIST, {"label": "env=prod"})) == {str(prod.pk), str(other_tenant.pk)}
    assert listed(client.get(CHANGELIST, {"label": "env=prod", "tenant": "tenant-a"})) == {str(prod.pk)}
    assert listed(client.get(CHANGELIST, {"label": "env=staging"})) == {str(staging.pk)}
    assert listed(client.get(CHANGELIST, {"label": "env"})) == set()  # not key=value: nothing, never everything


def test_a_completed_interval_task_shows_its_schedule_options_and_is_filtered_by_status(support_user, client_as):
    done = make_task(
        cron_expression=None,
        every_seconds=5400,
        anchor=timezone.now().replace(microsecond=0),
        status=TaskStatus.COMPLETED,
        next_run_at=None,
        overlap="buffer_one",
        window_seconds=120,
        max_runs=4,
        runs_scheduled=4,
    )
    active = make_task()
    client = client_as(support_user)

    assert listed(client.get(CHANGELIST, {"status__exact": "completed"})) == {str(done.pk)}
    assert str(active.pk) not in listed(client.get(CHANGELIST, {"status__exact": "completed"}))
    page = client.get(reverse("admin:tasks_task_change", args=[done.pk])).content.decode()
    assert "every 1h30m from" in page
    assert "completed (4 runs; past its end or run limit)" in page
    assert "Buffer One" in page and "120" in page  # the choice's label
