"""Pausing and resuming a tenant in the admin: its own permission, a row made when missing, every change audited."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse

from tasks.models import TenantLimits
from tasks.pausing import tenant_pause
from tests.admin.support import make_staff
from tests.factories import make_task

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:tasks_tenantlimits_changelist")
PAUSE = reverse("admin:tasks_tenantlimits_pause")


def resume_url(tenant_id: str) -> str:
    return reverse("admin:tasks_tenantlimits_resume", args=[tenant_id])


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def audit(tenant_id: str) -> list[tuple[str, str]]:
    entries = LogEntry.objects.filter(object_id=tenant_id, action_flag=CHANGE).order_by("id")
    return [(entry.user.username, entry.change_message) for entry in entries]


def paused(tenant_id: str) -> bool:
    return TenantLimits.objects.filter(tenant_id=tenant_id, paused=True).exists()


def test_support_pauses_a_tenant_without_a_limits_row_and_it_is_audited(support_user, client_as):
    make_task(tenant_id="acme")

    data = {"tenant_id": "acme", "reason": "INC-42 endpoint melting"}
    response = client_as(support_user).post(PAUSE, data, follow=True)

    assert response.redirect_chain[-1][0] == CHANGELIST + "?q=acme"
    assert messages_of(response)[0].startswith("Paused tenant acme: its tasks make no new jobs")
    row = TenantLimits.objects.get(tenant_id="acme")
    assert (row.paused, row.paused_by, row.paused_reason) == (True, "agent", "INC-42 endpoint melting")
    assert row.paused_at is not None and row.max_running_jobs is None  # the limits stay the defaults
    assert audit("acme") == [("agent", "Paused the tenant: INC-42 endpoint melting")]
    assert ">PAUSED</strong> since" in response.content.decode()  # the list shows it


def test_pausing_keeps_the_tenants_existing_limits(support_user, client_as):
    TenantLimits.objects.create(tenant_id="acme", max_running_jobs=7, note="slow endpoints")
    client_as(support_user).post(PAUSE, {"tenant_id": "acme", "reason": "INC-42"})
    row = TenantLimits.objects.get(tenant_id="acme")
    assert (row.paused, row.max_running_jobs, row.note) == (True, 7, "slow endpoints")


def test_a_limits_row_read_before_a_pause_and_saved_after_it_keeps_the_pause():
    """The admin's change form saves the row it read; a pause committed meanwhile must not be undone."""
    read_before = TenantLimits.objects.create(tenant_id="tenant-a", max_running_jobs=5)
    assert tenant_pause(tenant_id="tenant-a", paused_by="agent", reason="incident 12")
    read_before.max_running_jobs = 8
    read_before.save()
    row = TenantLimits.objects.get(tenant_id="tenant-a")
    assert (row.max_running_jobs, row.paused, row.paused_by, row.paused_reason) == (8, True, "agent", "incident 12")


def test_pausing_a_paused_tenant_changes_nothing_and_keeps_who_paused_it(support_user, client_as):
    tenant_pause(tenant_id="acme", paused_by="first-agent", reason="INC-41")

    response = client_as(support_user).post(PAUSE, {"tenant_id": "acme", "reason": "INC-42"}, follow=True)

    assert "Tenant acme was already paused since" in messages_of(response)[0]
    assert "by first-agent: nothing changed." in messages_of(response)[0]
    assert TenantLimits.objects.get(tenant_id="acme").paused_reason == "INC-41"
    assert audit("acme") == []


def test_pausing_an_id_no_task_carries_warns_to_check_it(support_user, client_as):
    response = client_as(support_user).post(PAUSE, {"tenant_id": "acmee", "reason": "INC-42"}, follow=True)
    assert messages_of(response)[0].endswith("No task has this tenant id: check it.")
    assert paused("acmee")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"tenant_id": "acme corp", "reason": "INC-42"}, "tenant_id"),
        ({"tenant_id": "acme", "reason": ""}, "reason"),
        ({"tenant_id": "acme", "reason": "x" * 256}, "reason"),
    ],
    ids=["bad tenant id", "no reason", "reason too long"],
)
def test_bad_input_is_refused_with_the_field_named(support_user, client_as, data, field):
    response = client_as(support_user).post(PAUSE, data)
    assert response.status_code == 200
    assert field in response.context["form"].errors
    assert not TenantLimits.objects.exists()


def test_the_pause_form_is_prefilled_from_a_tenants_page(support_user, client_as):
    TenantLimits.objects.create(tenant_id="acme")
    client = client_as(support_user)
    page = client.get(reverse("admin:tasks_tenantlimits_change", args=["acme"])).content.decode()
    assert f'href="{PAUSE}?tenant=acme"' in page and 'id="resume-tenant-form"' not in page
    assert 'value="acme"' in client.get(PAUSE, {"tenant": "acme"}).content.decode()


def test_support_resumes_a_tenant_from_its_page_and_it_is_audited(support_user, client_as):
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    client = client_as(support_user)
    page = client.get(reverse("admin:tasks_tenantlimits_change", args=["acme"])).content.decode()
    assert 'id="resume-tenant-form"' in page

    response = client.post(resume_url("acme"), follow=True)

    assert messages_of(response)[0].startswith("Resumed tenant acme: its pending jobs are claimed again")
    row = TenantLimits.objects.get(tenant_id="acme")
    assert (row.paused, row.paused_at, row.paused_by, row.paused_reason) == (False, None, "", "")
    assert audit("acme") == [("agent", "Resumed the tenant")]


def test_resuming_a_tenant_that_is_not_paused_changes_nothing(support_user, client_as):
    TenantLimits.objects.create(tenant_id="acme")
    response = client_as(support_user).post(resume_url("acme"), follow=True)
    assert messages_of(response) == ["Tenant acme is not paused: nothing to do."]
    assert audit("acme") == []


def test_bulk_resume_counts_what_it_resumed_and_audits_each(support_user, client_as):
    for tenant in ("acme", "globex"):
        tenant_pause(tenant_id=tenant, paused_by="agent", reason="INC-42")
    TenantLimits.objects.create(tenant_id="initech")
    data = {"action": "resume_selected", ACTION_CHECKBOX_NAME: ["acme", "globex", "initech"]}

    response = client_as(support_user).post(CHANGELIST, data, follow=True)

    assert "Resumed 2; not paused 1." in messages_of(response)
    assert not TenantLimits.objects.filter(paused=True).exists()
    assert audit("acme") == audit("globex") == [("agent", "Resumed the tenant")]


def test_staff_without_the_permission_can_neither_pause_nor_resume(client_as):
    viewer = make_staff("viewer", perms=("tasks.view_tenantlimits", "tasks.change_tenantlimits"))
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    client = client_as(viewer)

    assert client.get(PAUSE).status_code == 403
    assert client.post(PAUSE, {"tenant_id": "globex", "reason": "x"}).status_code == 403
    assert client.post(resume_url("acme")).status_code == 403
    client.post(CHANGELIST, {"action": "resume_selected", ACTION_CHECKBOX_NAME: ["acme"]})

    assert paused("acme") and not paused("globex") and audit("acme") == []
    page = client.get(CHANGELIST).content.decode()
    assert 'id="pause-tenant-link"' not in page and "resume_selected" not in page
    # A limits editor cannot clear the pause through the limits form either (the fields are read-only) ...
    client.post(reverse("admin:tasks_tenantlimits_change", args=["acme"]), {"max_running_jobs": "5", "paused": ""})
    assert paused("acme")
    # ... nor delete a paused tenant's row (that would resume it unaudited).
    delete = reverse("admin:tasks_tenantlimits_delete", args=["acme"])
    assert client_as(make_staff("deleter", perms=("tasks.delete_tenantlimits",))).post(delete).status_code == 403


def test_resume_takes_only_post(support_user, client_as):
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    assert client_as(support_user).get(resume_url("acme")).status_code == 405
    assert paused("acme")


def test_the_list_filters_paused_tenants(support_user, client_as):
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    TenantLimits.objects.create(tenant_id="globex")
    response = client_as(support_user).get(CHANGELIST, {"paused__exact": "1"})
    assert [row.tenant_id for row in response.context["cl"].result_list] == ["acme"]


def test_the_task_admin_says_when_a_tasks_tenant_is_paused(support_user, client_as):
    paused_task = make_task(tenant_id="acme", name="paused-tenant-task")
    other = make_task(tenant_id="globex", name="running-tenant-task")
    TenantLimits.objects.create(tenant_id="globex", paused=False)  # a limits row alone is not a pause
    tenant_pause(tenant_id="acme", paused_by="agent", reason="INC-42")
    client = client_as(support_user)

    listing = client.get(reverse("admin:tasks_task_changelist")).content.decode()
    rows = {
        name: listing[listing.index(name) :].split("</tr>")[0] for name in ("paused-tenant-task", "running-tenant-task")
    }
    assert "paused (fires nothing until resumed)" in rows["paused-tenant-task"]
    assert "paused (fires nothing until resumed)" not in rows["running-tenant-task"]
    page = client.get(reverse("admin:tasks_task_change", args=[paused_task.pk])).content.decode()
    assert "paused (fires nothing until resumed)" in page
    page = client.get(reverse("admin:tasks_task_change", args=[other.pk])).content.decode()
    assert "paused (fires nothing until resumed)" not in page
