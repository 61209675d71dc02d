"""The active-task limit through vtgate: each tenant's bound and count on its own shard."""

from __future__ import annotations

from tasks.models import Task, TaskStatus, TenantLimits
from tests.vitess.shards import rows_on_shard

BODY = {"name": "limited", "schedule": {"cron": "* * * * *"}, "http": {"url": "http://127.0.0.1:9/hook"}}


def test_each_tenants_limit_holds_on_its_shard_with_the_bound_kept_there(tenant_client, tenants_by_shard, settings):
    settings.EGRESS_ALLOWLIST = "127.0.0.1:9"
    for shard, tenants in tenants_by_shard.items():
        tenant = tenants[0]
        TenantLimits.objects.create(tenant_id=tenant, max_active_tasks=2)
        client = tenant_client(tenant)
        created = [client.post("/v1/tasks", BODY, format="json") for _ in range(2)]
        assert [response.status_code for response in created] == [201, 201], created[-1].content
        refused = client.post("/v1/tasks", BODY, format="json")
        assert refused.status_code == 409
        assert (refused.json()["max_active_tasks"], refused.json()["active_tasks"]) == (2, 2)
        assert client.delete(f"/v1/tasks/{created[0].json()['id']}").status_code == 204
        assert client.post("/v1/tasks", BODY, format="json").status_code == 201  # counted again: room for one
        bound = rows_on_shard(shard, "SELECT active_tasks_bound FROM tenant_limits WHERE tenant_id = %s", [tenant])
        assert bound == [(2,)]
        assert Task.objects.filter(tenant_id=tenant, status=TaskStatus.ACTIVE).count() == 2
