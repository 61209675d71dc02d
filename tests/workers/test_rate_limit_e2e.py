"""Rate limits end to end: real run_executor processes, a real receiver on 127.0.0.1, real MariaDB."""

from __future__ import annotations

import subprocess
from collections import Counter
from datetime import UTC, timedelta

import pytest
from django.db import connection

from domain.ids import new_id
from jobs.models import Job, JobStatus
from ratelimits.models import OriginBucket
from ratelimits.services import rate_limit_set
from tests.processes import child_env, run_manage, start_manage, stop_processes, wait_until
from tests.receivers import Receiver
from tests.workers.executor_db import bulk_jobs, db_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


def _env(receiver: Receiver) -> dict[str, str]:
    return child_env(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}")


def _executor(receiver: Receiver, worker_id: str, log_path) -> subprocess.Popen:
    args = ("run_executor", "--worker-id", worker_id, "--idle-seconds", "0.2", "--concurrency", "20", "--grace", "2")
    return start_manage(*args, env=_env(receiver), log_path=log_path)


def test_two_executors_deliver_every_limited_job_once_within_the_buckets_grants_and_fail_none(receiver, tmp_path):
    per_second, burst = 20.0, 5
    rate_limit_set(tenant_id="tenant-a", origin=f"http://127.0.0.1:{receiver.port}", per_second=per_second, burst=burst)
    logs = [tmp_path / "w-1.log", tmp_path / "w-2.log"]
    executors = [_executor(receiver, "w-1", logs[0]), _executor(receiver, "w-2", logs[1])]
    try:
        wait_until(lambda: all("executor started" in log.read_text() for log in logs), what="both executors")
        now = db_now() - timedelta(seconds=1)
        limited = [
            bulk_jobs(1, tenant_id="tenant-a", url=receiver.url(f"/a/{n}"), next_attempt_at=now)[0] for n in range(60)
        ]
        free = bulk_jobs(10, tenant_id="tenant-b", url=receiver.url("/b"), next_attempt_at=now)
        done = Job.objects.filter(id__in=limited + free, status=JobStatus.SUCCEEDED)
        wait_until(lambda: done.count() == 70, timeout=120, what="every job delivered")
    finally:
        codes = stop_processes(*executors, timeout=15)
    assert codes == [0, 0]
    arrivals = Counter(request.path for request in receiver.received())
    assert arrivals == {**{f"/a/{n}": 1 for n in range(60)}, "/b": 10}  # each once
    # None failed, retried or died because of the limit: one attempt each.
    assert set(Job.objects.filter(id__in=limited).values_list("status", "attempt")) == {(JobStatus.SUCCEEDED, 1)}
    bucket = OriginBucket.objects.get(tenant_id="tenant-a")
    assert bucket.granted == 60  # one grant per call, whichever executor claimed it
    span = (bucket.last_granted_for - bucket.first_granted_for).total_seconds()
    assert bucket.granted <= burst + per_second * span + 1e-6
    assert not OriginBucket.objects.filter(tenant_id="tenant-b").exists()


def test_a_retry_after_from_one_tasks_call_holds_back_another_tasks_job_to_the_same_origin(receiver):
    now = db_now() - timedelta(seconds=1)
    (refused,) = bulk_jobs(
        1, tenant_id="tenant-a", task_id=new_id(), url=receiver.url("/retry-after/429/60"), next_attempt_at=now
    )
    later = now + timedelta(hours=1)
    (other_task,) = bulk_jobs(
        1, tenant_id="tenant-a", task_id=new_id(), url=receiver.url("/other"), next_attempt_at=later
    )
    (other_tenant,) = bulk_jobs(1, tenant_id="tenant-b", url=receiver.url("/tenant-b"), next_attempt_at=later)
    assert run_manage("run_executor", "--once", "--worker-id", "w-1", env=_env(receiver)).returncode == 0
    bucket = OriginBucket.objects.get(tenant_id="tenant-a", origin=f"http://127.0.0.1:{receiver.port}")
    assert bucket.blocked_until.replace(tzinfo=UTC) > db_now() + timedelta(seconds=50)
    # The other task's job (and tenant-b's) come due now: the next run leaves tenant-a's alone.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs SET next_attempt_at = NOW(3) - INTERVAL 1 SECOND WHERE id IN (%s, %s)",
            [other_task.bytes, other_tenant.bytes],
        )
    assert run_manage("run_executor", "--once", "--worker-id", "w-2", env=_env(receiver)).returncode == 0
    assert [request.path for request in receiver.received()] == ["/retry-after/429/60", "/tenant-b"]
    held = Job.objects.get(id=other_task)
    assert (held.status, held.attempt, held.fence, held.next_attempt_at) == (
        JobStatus.PENDING,
        0,
        0,
        bucket.blocked_until,
    )
    first = Job.objects.get(id=refused)
    assert (first.status, first.attempt, first.http_status) == (JobStatus.PENDING, 1, 429)  # its own retry, as asked
