"""The queue sharded by tenant: the API through vtgate, one loop set per shard, a real receiver.

Tenants sit on both shards (vtgate's xxhash vindex decides); each shard's scheduler,
executor, reconciler and archiver reach only that shard (DATABASE_URL `jobsched_tenants:<shard>`),
so every claim, tick, sweep and fenced write runs on one MariaDB as on a single primary.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta

from django.db import connection

from jobs.models import Job, JobStatus
from jobs.queue import claim_due, record_results, sweep_expired_leases
from tests.end_to_end import one_shot
from tests.factories import db_now, make_job, make_task
from tests.processes import child_env, wait_until
from tests.receivers import Receiver
from tests.vitess.shards import loop_sets, on_shard, rows_on_shard, start_loop
from workers.executor.results import decide


def _envs(shard_urls, allow: str, **extra: str) -> dict[str, dict[str, str]]:
    return {
        shard: child_env(DATABASE_URL=url, EGRESS_ALLOWLIST=allow, ARCHIVE_SUCCEEDED_AFTER_SECONDS="1", **extra)
        for shard, url in shard_urls.items()
    }


def _due_in(seconds: float) -> datetime:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).replace(microsecond=0)


def test_every_call_on_both_shards_fires_once_with_its_headers_and_is_archived_on_its_shard(
    tenant_client, settings, tmp_path, tenants_by_shard, shard_urls
):
    with Receiver() as receiver:
        allow = f"127.0.0.1:{receiver.port}"
        settings.EGRESS_ALLOWLIST = allow
        run_at = _due_in(4)
        made = {}  # path -> (tenant, shard, task id)
        for shard, tenants in tenants_by_shard.items():
            for tenant in tenants:
                client = tenant_client(tenant)
                for n in range(2):
                    path = f"/{tenant}/{n}"
                    task = one_shot(client, f"call {n}", receiver.url(path), run_at, headers={"X-Tenant": tenant})
                    made[path] = (tenant, shard, task["id"])
        # The API's inserts went to each tenant's own shard, and only there.
        for shard, tenants in tenants_by_shard.items():
            stored = {row[0] for row in rows_on_shard(shard, "SELECT DISTINCT tenant_id FROM tasks")}
            assert set(tenants) <= stored and not (
                stored & {t for s, ts in tenants_by_shard.items() if s != shard for t in ts}
            )
        # Each tenant's list, read through vtgate with the page's own SQL, holds its tasks and no other's.
        for tenant in {tenant for tenant, _, _ in made.values()}:
            listed = tenant_client(tenant).get("/v1/tasks?limit=50").json()["results"]
            assert sorted(task["id"] for task in listed) == sorted(
                task_id for owner, _, task_id in made.values() if owner == tenant
            )
            # ... each written by the shard's database as the task's own answer is
            assert listed == [tenant_client(tenant).get(f"/v1/tasks/{task['id']}").json() for task in listed]

        with loop_sets(_envs(shard_urls, allow), tmp_path):
            wait_until(lambda: len(receiver.received()) >= len(made), timeout=60, what="every call")
            wait_until(
                lambda: not Job.objects.filter(task_id__in=[m[2] for m in made.values()]).exists(),
                timeout=60,
                what="archiving on both shards",
            )
            calls = receiver.received()
            assert sorted(call.path for call in calls) == sorted(made), "each call exactly once"
            for call in calls:
                tenant, shard, task_id = made[call.path]
                assert call.at >= run_at.timestamp() - 0.05, "fired before its second"
                assert call.headers["X-Tenant"] == tenant
                assert call.headers["X-Attempt"] == "1"
                assert call.headers["X-Scheduled-At"].startswith(run_at.strftime("%Y-%m-%dT%H:%M:%S"))
                job_id = call.headers["Idempotency-Key"]
                # Archived by that shard's archiver into that shard's history (SQL history store).
                history = tenant_client(tenant).get(f"/v1/tasks/{task_id}/history").json()["results"]
                assert [(job["id"], job["status"]) for job in history] == [(job_id, "succeeded")]
                assert rows_on_shard(shard, "SELECT COUNT(*) FROM job_history WHERE tenant_id = %s", [tenant]) == [(2,)]


def test_a_killed_executors_jobs_are_recovered_by_its_shards_reconciler_while_the_other_shard_fires_on_time(
    tenant_client, settings, tmp_path, tenants_by_shard, shard_urls
):
    broken, healthy = list(tenants_by_shard)
    broken_tenant, healthy_tenant = tenants_by_shard[broken][0], tenants_by_shard[healthy][0]
    with Receiver() as receiver:
        allow = f"127.0.0.1:{receiver.port}"
        settings.EGRESS_ALLOWLIST = allow
        hanging = [
            one_shot(tenant_client(broken_tenant), f"hang {n}", receiver.url(f"/hang-on-attempt/1?n={n}"), _due_in(4))
            for n in range(3)
        ]
        envs = _envs(shard_urls, allow)
        with loop_sets(envs, tmp_path) as loops:
            wait_until(lambda: len(receiver.received("/hang-on-attempt/1")) == 3, timeout=60, what="the hung calls")
            loops[broken]["executor"].send_signal(signal.SIGKILL)  # no give-back: its claims stay running
            loops[broken]["executor"].wait(10)
            # Due while the broken shard has no executor and its jobs wait for the sweep.
            later = _due_in(4)
            for n in range(3):
                one_shot(tenant_client(healthy_tenant), f"later {n}", receiver.url(f"/later/{n}"), later)
            hung = Job.objects.filter(task_id__in=[t["id"] for t in hanging])
            assert set(hung.values_list("status", "attempt")) == {(JobStatus.RUNNING, 1)}
            # Time passes for the leases only (timeout + 30 s): the broken shard's reconciler
            # takes them back, its next executor fires them again.
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL 1 SECOND"
                    " WHERE tenant_id = %s AND status = 'running'",
                    [broken_tenant],
                )
            wait_until(lambda: not hung.filter(status=JobStatus.RUNNING).exists(), timeout=30, what="the sweep")
            assert {job.error for job in hung} == {"lease expired"}
            loops[broken]["executor"] = start_loop(broken, "executor", envs[broken], tmp_path)
            wait_until(
                lambda: set(hung.values_list("status", "attempt")) == {(JobStatus.SUCCEEDED, 2)},
                timeout=60,
                what="the retried calls",
            )
            wait_until(lambda: len(receiver.received()) >= 9, timeout=60, what="the healthy shard's calls")
            calls = receiver.received()
            assert [c.headers["X-Attempt"] for c in calls if c.path.startswith("/hang")].count("2") == 3
            fired = sorted(c.at - later.timestamp() for c in calls if c.path.startswith("/later/"))
            assert len(fired) == 3, "each of the healthy shard's calls exactly once"
            assert all(-0.05 <= lag < 1.5 for lag in fired), f"the healthy shard fired late: {fired}"


def test_a_late_result_through_vtgate_is_fenced_and_the_other_shard_is_untouched(tenants_by_shard):
    (shard, tenants), (_, other_tenants) = tenants_by_shard.items()
    past = db_now() - timedelta(seconds=1)
    job = make_job(make_task(tenant_id=tenants[1], run_at=past), scheduled_at=past)
    elsewhere = make_job(make_task(tenant_id=other_tenants[1], run_at=past), scheduled_at=past)
    with on_shard(shard):  # the executor's and the reconciler's session: vtgate, targeting one shard
        (first,) = [j for j in claim_due(worker_id="w-a", limit=100, lookahead_seconds=1) if j.id == job.id]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL 1 SECOND WHERE id = %s", [job.id.bytes]
            )
        assert sweep_expired_leases(limit=100) == 1
        (second,) = [j for j in claim_due(worker_id="w-b", limit=100, lookahead_seconds=1) if j.id == job.id]
        assert (first.attempt, second.attempt) == (1, 2)
        assert second.fence > first.fence  # the fencing token the late write carries is the older one

        def result(claimed, status):
            return decide(
                job_id=claimed.id,
                fence=claimed.fence,
                attempt=claimed.attempt,
                max_attempts=claimed.max_attempts,
                backoff_base_seconds=claimed.backoff_base_seconds,
                http_status=status,
                error=None,
                response_body="late" if claimed is first else "ok",
            )

        late = record_results(worker_id="w-a", results=[result(first, 500)])
        assert late.written == [] and [r.job_id for r in late.dropped] == [job.id]
        row = Job.objects.get(id=job.id)
        assert (row.status, row.attempt, row.worker_id) == (JobStatus.RUNNING, 2, "w-b")
        assert len(record_results(worker_id="w-b", results=[result(second, 200)]).written) == 1
    # Read back through vtgate's routing by tenant: the current attempt's result, the other
    # shard's due job never claimed by this shard's session.
    assert Job.objects.values_list("status", "attempt", "response_body").get(id=job.id) == (
        JobStatus.SUCCEEDED,
        2,
        "ok",
    )
    assert Job.objects.values_list("status", "attempt").get(id=elsewhere.id) == (JobStatus.PENDING, 0)
