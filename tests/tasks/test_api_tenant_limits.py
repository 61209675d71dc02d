"""The active-task limit through the API on real MariaDB: 409 problem+json naming the limit, and no race past it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections

from tasks.models import Task, TaskStatus, TenantLimits
from tests.factories import make_task

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
BODY = {"name": "limited", "schedule": {"cron": "* * * * *"}, "http": {"url": "https://example.com/hook"}}
LIMIT_TYPE = "https://jobsched.dev/problems/active-task-limit"


@pytest.fixture
def client(tenant_client):
    return tenant_client("tenant-a")


def _assert_limit_problem(response, *, limit: int, active: int) -> None:
    assert response.status_code == 409, response.content
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["type"] == LIMIT_TYPE
    assert problem["limit"] == "max_active_tasks"
    assert (problem["max_active_tasks"], problem["active_tasks"]) == (limit, active)
    assert "max_active_tasks" in problem["detail"]


def test_creating_one_task_more_than_the_tenants_limit_is_a_409_naming_the_limit(client):
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=2)
    for _ in range(2):
        assert client.post(TASKS, BODY, format="json").status_code == 201
    _assert_limit_problem(client.post(TASKS, BODY, format="json"), limit=2, active=2)
    assert Task.objects.filter(tenant_id="tenant-a").count() == 2


def test_the_default_limit_from_settings_applies_and_other_tenants_are_not_counted(client, tenant_client, settings):
    settings.TENANT_MAX_ACTIVE_TASKS = 1
    make_task(tenant_id="tenant-b")
    assert client.post(TASKS, BODY, format="json").status_code == 201
    _assert_limit_problem(client.post(TASKS, BODY, format="json"), limit=1, active=1)
    assert tenant_client("tenant-c").post(TASKS, BODY, format="json").status_code == 201


def test_a_limit_of_zero_in_settings_means_no_limit(client, settings):
    settings.TENANT_MAX_ACTIVE_TASKS = 0
    for _ in range(3):
        make_task(tenant_id="tenant-a")
    assert client.post(TASKS, BODY, format="json").status_code == 201


def test_paused_tasks_do_not_count_but_resuming_one_past_the_limit_is_a_409(client):
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=1)
    paused = make_task(tenant_id="tenant-a", status=TaskStatus.PAUSED)
    assert client.post(TASKS, BODY, format="json").status_code == 201
    response = client.post(f"{TASKS}/{paused.id}/resume")
    _assert_limit_problem(response, limit=1, active=1)
    paused.refresh_from_db()
    assert (paused.status, paused.version) == (TaskStatus.PAUSED, 1)
    active = Task.objects.get(tenant_id="tenant-a", status=TaskStatus.ACTIVE)
    assert client.post(f"{TASKS}/{active.id}/pause").status_code == 200
    assert client.post(f"{TASKS}/{paused.id}/resume").json()["status"] == "active"


def test_a_replayed_create_at_the_limit_returns_the_original_task_not_a_409(client):
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=1)
    first = client.post(TASKS, BODY, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 201
    again = client.post(TASKS, BODY, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


@pytest.mark.parametrize(("limit", "before", "parallel"), [(3, 0, 6), (6, 2, 8)])
def test_parallel_creates_never_pass_the_limit(tenant_client, limit, before, parallel):
    """From no bound (each create counts) and from a kept bound (the creates with room count nothing)."""
    TenantLimits.objects.create(tenant_id="tenant-a", max_active_tasks=limit)
    for _ in range(before):
        assert tenant_client("tenant-a").post(TASKS, BODY, format="json").status_code == 201
    start = threading.Barrier(parallel)

    def create(_: int) -> int:
        try:
            client = tenant_client("tenant-a")
            start.wait()
            return client.post(TASKS, BODY, format="json").status_code
        finally:
            connections.close_all()

    with ThreadPoolExecutor(parallel) as pool:
        statuses = sorted(pool.map(create, range(parallel)))
    # Each create locks the tenant's limits row before reading its bound or counting: never stale.
    room = limit - before
    assert statuses == [201] * room + [409] * (parallel - room)
    assert Task.objects.filter(tenant_id="tenant-a", status=TaskStatus.ACTIVE).count() == limit
    assert TenantLimits.objects.get(tenant_id="tenant-a").active_tasks_bound == limit
