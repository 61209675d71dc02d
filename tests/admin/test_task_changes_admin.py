"""The audit trail in the console: staff actions recorded as `staff:<name>`, shown on the task, filtered, read-only."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from tasks import services
from tasks.models import TaskChange
from tests.admin.support import make_staff
from tests.factories import make_task

TASKS = reverse("admin:tasks_task_changelist")
CHANGES = reverse("admin:tasks_taskchange_changelist")

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(db):
    return make_staff("operator", perms=("tasks.view_task", "tasks.change_task", "tasks.view_taskchange"))


def test_a_bulk_pause_and_resume_from_the_console_are_recorded_as_the_staff_user(operator, client_as):
    first, second = make_task(), make_task()
    client = client_as(operator)

    client.post(TASKS, {"action": "pause_selected", ACTION_CHECKBOX_NAME: [str(first.pk), str(second.pk)]})
    client.post(TASKS, {"action": "resume_selected", ACTION_CHECKBOX_NAME: [str(first.pk)]})

    recorded = list(TaskChange.objects.order_by("id").values_list("task_id", "action", "actor"))
    assert sorted(recorded[:2]) == sorted(
        [(first.pk, "pause", "staff:operator"), (second.pk, "pause", "staff:operator")]
    )
    assert recorded[2] == (first.pk, "resume", "staff:operator")
    pause = TaskChange.objects.filter(task_id=second.pk).get()
    assert {entry["field"]: entry["new"] for entry in pause.changes}["paused_reason"] == "paused by support staff"


def test_the_task_page_shows_its_changes_newest_first(operator, client_as):
    task = make_task()
    services.task_pause(tenant_id=task.tenant_id, task_id=task.pk, actor="token:alice@example.com")
    services.task_resume(tenant_id=task.tenant_id, task_id=task.pk, actor="staff:bob")

    page = client_as(operator).get(reverse("admin:tasks_task_change", args=[task.pk])).content.decode()

    assert "token:alice@example.com" in page and "staff:bob" in page
    assert page.index("staff:bob") < page.index("token:alice@example.com")  # newest first
    assert f"{CHANGES}?task_id={task.pk}" in page  # the whole list, filtered to this task


def test_the_changes_list_filters_by_tenant_task_action_and_actor(operator, client_as):
    mine = make_task(tenant_id="tenant-a")
    theirs = make_task(tenant_id="tenant-b")
    services.task_pause(tenant_id="tenant-a", task_id=mine.pk, actor="token:alice")
    services.task_pause(tenant_id="tenant-b", task_id=theirs.pk, actor="token:bob")
    services.task_resume(tenant_id="tenant-b", task_id=theirs.pk, actor="token:bob")
    client = client_as(operator)

    def listed(**query):
        response = client.get(CHANGES, query)
        assert response.status_code == 200
        return sorted((str(c.task_id), c.action) for c in response.context["cl"].result_list)

    assert listed(tenant="tenant-a") == [(str(mine.pk), "pause")]
    assert listed(task_id=str(theirs.pk), action__exact="resume") == [(str(theirs.pk), "resume")]
    assert listed(actor="token:bob") == sorted([(str(theirs.pk), "pause"), (str(theirs.pk), "resume")])


def test_the_changes_are_read_only_in_the_console(operator, client_as, admin_client):
    task = make_task()
    services.task_delete(tenant_id=task.tenant_id, task_id=task.pk, actor="token:alice")
    change = TaskChange.objects.get()
    client = client_as(operator)

    detail = client.get(reverse("admin:tasks_taskchange_change", args=[change.pk]))

    assert detail.status_code == 200 and "token:alice" in detail.content.decode()
    assert admin_client.get(reverse("admin:tasks_taskchange_add")).status_code == 403
    assert (
        admin_client.post(reverse("admin:tasks_taskchange_delete", args=[change.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert TaskChange.objects.count() == 1


def test_staff_without_the_view_permission_do_not_see_the_changes(client_as):
    viewer = make_staff("viewer", perms=("tasks.view_task",))
    assert client_as(viewer).get(CHANGES).status_code == 403
