"""The shared multi-tenant base (tests/tenants.py): three parties that really are three."""

import pytest

from tests.tenants import OTHER_TENANT, OWNER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"


def test_owner_and_other_tenant_see_only_their_own_tasks(owner, other_tenant):
    mine, theirs = owner.make_task(), other_tenant.make_task()
    assert (mine.tenant_id, theirs.tenant_id) == (OWNER, OTHER_TENANT)
    assert [t["id"] for t in owner.get(TASKS).json()["results"]] == [str(mine.id)]
    assert [t["id"] for t in other_tenant.get(TASKS).json()["results"]] == [str(theirs.id)]
    assert other_tenant.get(f"{TASKS}/{mine.id}").status_code == 404


def test_the_stranger_has_no_token(stranger, owner):
    task = owner.make_task()
    assert stranger.get(TASKS).status_code == 401
    assert stranger.get(f"{TASKS}/{task.id}").status_code == 401


def test_a_tenants_job_belongs_to_one_of_its_own_tasks(owner, other_tenant):
    assert owner.make_job().tenant_id == OWNER
    with pytest.raises(AssertionError, match="its own tasks"):
        owner.make_job(other_tenant.make_task())
