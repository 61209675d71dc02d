"""The support console's dead-letter view across shards: bounded scatter queries through vtgate."""

from __future__ import annotations

import uuid

from django.test import Client
from django.urls import reverse

from console.dead_letters import dead_summary
from tests.admin.support import make_dead_job, make_staff, support_group
from tests.factories import make_task


def test_the_dead_letter_console_lists_and_counts_dead_jobs_of_tenants_on_both_shards(tenants_by_shard):
    dead = {}
    for tenants in tenants_by_shard.values():
        for tenant in tenants:
            task = make_task(tenant_id=tenant, name=f"nightly {tenant}")
            dead[tenant] = {str(make_dead_job(task).pk) for _ in range(2)}
    client = Client()
    client.force_login(make_staff(f"agent-{uuid.uuid4().hex[:8]}", groups=(support_group(),)))

    response = client.get(reverse("admin:jobs_deadjob_changelist"))
    assert response.status_code == 200
    listed = {str(job.pk) for job in response.context["cl"].result_list}
    assert set().union(*dead.values()) <= listed
    page = response.content.decode()
    assert all(tenant in page for tenant in dead), "the tenant filter (from the summary) names every tenant"
    counts = {row.tenant_id: row.dead for row in dead_summary().tenants}
    assert {tenant: counts.get(tenant) for tenant in dead} == dict.fromkeys(dead, 2)

    one = next(iter(dead[tenants_by_shard["80-"][0]]))
    detail = client.get(reverse("admin:jobs_deadjob_change", args=[one]))
    assert detail.status_code == 200 and "nightly" in detail.content.decode()
