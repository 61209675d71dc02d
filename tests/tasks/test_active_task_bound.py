"""The active-task limit's kept bound on real MariaDB: a create with room counts nothing, the limit stays exact."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tasks import limits
from tasks.models import Task, TaskChange, TaskStatus, TenantLimits
from tests.factories import make_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
BODY = {"name": "bounded", "schedule": {"cron": "* * * * *"}, "http": {"url": "https://example.com/hook"}}


@pytest.fixture
def client(tenant_client):
    return tenant_client("tenant-a")


def _bound(tenant_id: str = "tenant-a") -> int | None:
    return TenantLimits.objects.values_list("active_tasks_bound", flat=True).get(tenant_id=tenant_id)


def _counts(queries: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if "COUNT(" in query["sql"].upper()]


def test_a_create_with_room_under_the_bound_counts_no_task(client):
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=5)
    with CaptureQueriesContext(connection) as first:
        assert client.post(TASKS, BODY, format="json").status_code == 201
    assert len(_counts(first)) == 1  # no bound yet: counted once, and the bound set
    assert _bound() == 1
    for expected in (2, 3):
        with CaptureQueriesContext(connection) as later:
            assert client.post(TASKS, BODY, format="json").status_code == 201
        assert _counts(later) == []
        assert _bound() == expected


def test_a_create_with_room_writes_the_tenants_row_once_and_that_write_holds_its_lock(client, tenant_client, settings):
    """Within the bound, the UPDATE that raises it is the create's one statement on tenant_limits: its
    row lock is what a concurrent create waits on (test_api_tenant_limits runs them in parallel)."""
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=5)
    assert client.post(TASKS, BODY, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        assert client.post(TASKS, BODY, format="json").status_code == 201
    on_limits = [query["sql"] for query in queries.captured_queries if "tenant_limits" in query["sql"]]
    assert len(on_limits) == 1 and on_limits[0].startswith("UPDATE tenant_limits SET active_tasks_bound")
    assert _bound() == 2
    # A tenant without a limits row yet: the UPDATE matches nothing, the row is made, locked and counted.
    settings.TENANT_MAX_ACTIVE_TASKS = 10
    with CaptureQueriesContext(connection) as first:
        assert tenant_client("tenant-b").post(TASKS, BODY, format="json").status_code == 201
    statements = [query["sql"].split(" ", 2)[:2] for query in first.captured_queries if "tenant_limits" in query["sql"]]
    assert statements[:2] == [["UPDATE", "tenant_limits"], ["INSERT", "INTO"]] and len(_counts(first)) == 1
    assert _bound("tenant-b") == 1


def test_without_a_default_limit_a_create_locks_first_and_reads_only_the_override(client, settings):
    """No default (0): nothing to admit within, so no UPDATE goes first; the override is read under the lock."""
    settings.TENANT_MAX_ACTIVE_TASKS = 0
    assert client.post(TASKS, BODY, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        assert client.post(TASKS, BODY, format="json").status_code == 201
    on_limits = [
        query["sql"].split(" ", 2)[:2] for query in queries.captured_queries if "tenant_limits" in query["sql"]
    ]
    assert on_limits[0] == ["INSERT", "INTO"] and _counts(queries) == [] and _bound() is None


def test_pauses_and_deletes_leave_the_bound_high_and_the_limit_is_recounted_exactly(client):
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=2)
    ids = [client.post(TASKS, BODY, format="json").json()["id"] for _ in range(2)]
    assert client.post(f"{TASKS}/{ids[0]}/pause").status_code == 200
    assert client.delete(f"{TASKS}/{ids[1]}").status_code == 204
    assert _bound() == 2  # an upper bound: what leaves the active tasks does not lower it
    with CaptureQueriesContext(connection) as recount:
        assert client.post(TASKS, BODY, format="json").status_code == 201
    assert len(_counts(recount)) == 1
    assert _bound() == 1  # the count (0) and this task
    assert client.post(TASKS, BODY, format="json").status_code == 201
    refused = client.post(TASKS, BODY, format="json")
    assert refused.status_code == 409
    assert (refused.json()["max_active_tasks"], refused.json()["active_tasks"]) == (2, 2)
    resumed = client.post(f"{TASKS}/{ids[0]}/resume")
    assert resumed.status_code == 409 and resumed.json()["active_tasks"] == 2
    assert Task.objects.filter(tenant_id="tenant-a", status=TaskStatus.ACTIVE).count() == 2
    assert _bound() == 2


def test_a_refused_or_rolled_back_activation_leaves_the_bound_as_it_was(client):
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=3)
    assert client.post(TASKS, BODY, format="json").status_code == 201
    assert _bound() == 1
    with pytest.raises(RuntimeError), transaction.atomic():
        limits.ensure_room_for_active_task("tenant-a")
        assert _bound() == 2
        raise RuntimeError("the activation failed after the check")
    assert _bound() == 1
    invalid = client.post(TASKS, {**BODY, "schedule": {"cron": "not cron"}}, format="json")
    assert invalid.status_code == 400
    assert _bound() == 1


def test_a_create_the_bound_does_not_admit_keeps_nothing_it_wrote_before_the_bound(client):
    """Within the bound the task's rows go before the UPDATE (tasks.services._write_within_bound): when
    it matches nothing, they are rolled back, and the count under the lock does not see them."""
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=1)
    assert client.post(TASKS, BODY, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        refused = client.post(TASKS, BODY, format="json")
    assert refused.status_code == 409 and refused.json()["active_tasks"] == 1
    statements = [query["sql"].split(" ", 3)[:3] for query in queries.captured_queries]
    assert ["INSERT", "INTO", "`tasks`"] in statements and ["ROLLBACK"] in statements, statements
    assert Task.objects.filter(tenant_id="tenant-a").count() == 1
    assert TaskChange.objects.filter(tenant_id="tenant-a").count() == 1
    assert _bound() == 1


def test_a_bound_older_than_its_trust_is_counted_again(client):
    """An activation that did not raise the bound (a pod of the code before it) is caught within the age."""
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=3)
    assert client.post(TASKS, BODY, format="json").status_code == 201
    make_task(tenant_id="tenant-a")  # what an old pod's create leaves: an active task, the bound not raised
    make_task(tenant_id="tenant-a")
    assert _bound() == 1
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE tenant_limits SET active_tasks_counted_at = NOW(6) - INTERVAL %s SECOND WHERE tenant_id = %s",
            [limits.BOUND_TRUSTED_SECONDS + 1, "tenant-a"],
        )
    with CaptureQueriesContext(connection) as recount:
        refused = client.post(TASKS, BODY, format="json")
    assert refused.status_code == 409 and refused.json()["active_tasks"] == 3
    assert len(_counts(recount)) == 1


def test_a_limit_set_after_unlimited_creates_counts_them_all(client, settings):
    settings.TENANT_MAX_ACTIVE_TASKS = 0
    for _ in range(3):
        assert client.post(TASKS, BODY, format="json").status_code == 201
    assert _bound() is None  # no limit: nothing kept, nothing counted
    TenantLimits.objects.filter(tenant_id="tenant-a").update(max_active_tasks=3)
    refused = client.post(TASKS, BODY, format="json")
    assert refused.status_code == 409 and refused.json()["active_tasks"] == 3


def test_a_bound_kept_under_a_limit_is_forgotten_when_the_limit_is_lifted(client, settings):
    settings.TENANT_MAX_ACTIVE_TASKS = 5
    assert client.post(TASKS, BODY, format="json").status_code == 201
    assert _bound() == 1
    settings.TENANT_MAX_ACTIVE_TASKS = 0
    assert client.post(TASKS, BODY, format="json").status_code == 201
    assert _bound() is None  # unlimited creates are not counted: a later limit recounts
    settings.TENANT_MAX_ACTIVE_TASKS = 2
    assert client.post(TASKS, BODY, format="json").status_code == 409


def test_a_forced_insert_of_a_tenant_limits_row_starts_with_the_bound_unknown():
    row = TenantLimits(tenant_id="tenant-a", max_active_tasks=2, active_tasks_bound=0)
    row.save(force_insert=True)
    assert _bound() is None


def test_saving_a_tenant_limits_row_read_earlier_keeps_the_bound_the_creates_wrote(client):
    staff_copy = TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=5)
    for _ in range(2):
        assert client.post(TASKS, BODY, format="json").status_code == 201
    staff_copy.max_active_tasks = 2  # the admin's form saves the instance it read before the creates
    staff_copy.note = "lowered"
    staff_copy.save()
    assert _bound() == 2
    assert TenantLimits.objects.values_list("max_active_tasks", "note").get(tenant_id="tenant-a") == (2, "lowered")
    assert client.post(TASKS, BODY, format="json").status_code == 409
