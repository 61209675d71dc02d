"""Tenant limits in the admin: staff with the permission set overrides; the others cannot."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks.models import TenantLimits
from tests.admin.support import make_staff

CHANGELIST = reverse("admin:tasks_tenantlimits_changelist")
ADD = reverse("admin:tasks_tenantlimits_add")

pytestmark = pytest.mark.django_db


@pytest.fixture
def limits_editor(db):
    return make_staff(
        "limits", perms=("tasks.view_tenantlimits", "tasks.add_tenantlimits", "tasks.change_tenantlimits")
    )


def test_staff_with_the_permission_add_an_override_and_empty_fields_mean_the_defaults(limits_editor, client_as):
    response = client_as(limits_editor).post(
        ADD, {"tenant_id": "tenant-a", "max_running_jobs": "20", "max_active_tasks": "", "note": "slow endpoints"}
    )
    assert response.status_code == 302, response.content
    row = TenantLimits.objects.get(tenant_id="tenant-a")
    assert (row.max_running_jobs, row.max_active_tasks, row.note) == (20, None, "slow endpoints")


def test_the_list_shows_each_tenants_effective_limits(limits_editor, client_as, settings):
    settings.TENANT_MAX_ACTIVE_TASKS = 100
    settings.TENANT_MAX_RUNNING_JOBS = 0
    TenantLimits.objects.create(tenant_id="tenant-a", max_running_jobs=20)
    TenantLimits.objects.create(tenant_id="tenant-b", max_active_tasks=7)
    page = client_as(limits_editor).get(CHANGELIST).content.decode()
    assert "tenant-a" in page and "20" in page
    assert "default (100)" in page and "default (no limit)" in page


def test_an_override_of_zero_is_refused_with_the_field_named(limits_editor, client_as):
    response = client_as(limits_editor).post(ADD, {"tenant_id": "tenant-a", "max_running_jobs": "0"})
    assert response.status_code == 200
    assert "max_running_jobs" in response.context["adminform"].form.errors
    assert not TenantLimits.objects.exists()


def test_the_tenant_id_cannot_be_changed_once_the_row_exists(limits_editor, client_as):
    row = TenantLimits.objects.create(tenant_id="tenant-a")
    url = reverse("admin:tasks_tenantlimits_change", args=[row.pk])
    client_as(limits_editor).post(url, {"tenant_id": "tenant-z", "max_running_jobs": "5", "max_active_tasks": ""})
    assert list(TenantLimits.objects.values_list("tenant_id", "max_running_jobs")) == [("tenant-a", 5)]


def test_the_support_group_and_staff_without_the_permission_cannot_edit_limits(support_user, client_as):
    viewer = make_staff("viewer", perms=("tasks.view_tenantlimits",))
    TenantLimits.objects.create(tenant_id="tenant-a")
    for user in (support_user, viewer):
        response = client_as(user).post(ADD, {"tenant_id": "tenant-b", "max_running_jobs": "5"})
        assert response.status_code == 403
    url = reverse("admin:tasks_tenantlimits_change", args=["tenant-a"])
    client_as(viewer).post(url, {"max_running_jobs": "5"})
    assert TenantLimits.objects.get(tenant_id="tenant-a").max_running_jobs is None


def test_search_is_by_exact_tenant_id(limits_editor, client_as):
    TenantLimits.objects.create(tenant_id="tenant-a")
    TenantLimits.objects.create(tenant_id="tenant-ab")
    response = client_as(limits_editor).get(CHANGELIST, {"q": "tenant-a"})
    assert [row.tenant_id for row in response.context["cl"].result_list] == ["tenant-a"]


def test_a_tenant_id_outside_the_grammar_is_refused(limits_editor, client_as):
    response = client_as(limits_editor).post(ADD, {"tenant_id": "tenant a", "max_running_jobs": "5"})
    assert response.status_code == 200
    assert "tenant_id" in response.context["adminform"].form.errors
    assert not TenantLimits.objects.exists()
