"""Fair share end to end: two real run_executor processes, a real receiver, caps sampled throughout."""

from __future__ import annotations

import signal
import subprocess
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections

from jobs.models import Job, JobStatus
from tasks.models import TenantLimits
from tests.processes import child_env, start_manage, stop_processes, wait_until
from tests.receivers import Receiver
from tests.workers.executor_db import bulk_jobs, db_now

pytestmark = pytest.mark.django_db(transaction=True)


class RunningSampler:
    """Count a tenant's running jobs every few ms on its own connection, until stopped."""

    def __init__(self, tenant_id: str) -> None:
        self.tenant_id = tenant_id
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RunningSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        db = connections.create_connection("default")
        try:
            while not self._stop.is_set():
                with db.cursor() as cursor:
                    cursor.execute(
                        "SELECT COUNT(*) FROM jobs WHERE tenant_id = %s AND status = 'running'", [self.tenant_id]
                    )
                    self.samples.append(cursor.fetchone()[0])
                self._stop.wait(0.01)
        finally:
            db.close()


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


TENANT_A_CALL_SECONDS = (0.25, 0.55, 0.35, 0.45)


def _executor(receiver: Receiver, worker_id: str, log_path=None) -> subprocess.Popen:
    env = child_env(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}")
    args = ("run_executor", "--worker-id", worker_id, "--idle-seconds", "0.2", "--concurrency", "10", "--grace", "2")
    return start_manage(*args, env=env, log_path=log_path)


def _count(tenant_id: str, status: str) -> int:
    return Job.objects.filter(tenant_id=tenant_id, status=status).count()


def test_a_capped_tenant_never_runs_more_than_its_cap_across_two_executors_and_others_are_not_starved(
    receiver, tmp_path
):
    TenantLimits.objects.create(tenant_id="tenant-a", max_running_jobs=4)
    logs = [tmp_path / "w-1.log", tmp_path / "w-2.log"]
    executors = [_executor(receiver, "w-1", log_path=logs[0]), _executor(receiver, "w-2", log_path=logs[1])]
    b_done_while_a_left = None
    try:
        # Both up before the jobs exist: on a loaded machine the second one's start outlasted the
        # whole burst (4 s), and the first took every job.
        wait_until(lambda: all("executor started" in log.read_text() for log in logs), what="both executors")
        now = db_now() - timedelta(seconds=1)
        # tenant-a's burst is older and first in the table: the round-1 claim would have taken it first.
        # Its calls last 0.25-0.55 s in turn (0.4 s on average), claimed in that order: each freed slot
        # is contested on its own. With one duration for all, the four slots freed together at a fixed
        # phase of both executors' polls, and whichever executor won the first round won them all.
        for index, seconds in enumerate(TENANT_A_CALL_SECONDS * 10):
            bulk_jobs(
                1, tenant_id="tenant-a", url=receiver.url(f"/slow/{seconds}"),
                next_attempt_at=now - timedelta(seconds=5) + timedelta(milliseconds=index),
            )  # fmt: skip
        bulk_jobs(20, tenant_id="tenant-b", url=receiver.url("/hook"), next_attempt_at=now)
        with RunningSampler("tenant-a") as sampler:
            wait_until(lambda: _count("tenant-b", JobStatus.SUCCEEDED) == 20, timeout=60, what="tenant-b's jobs")
            b_done_while_a_left = 40 - _count("tenant-a", JobStatus.SUCCEEDED)
            wait_until(lambda: _count("tenant-a", JobStatus.SUCCEEDED) == 40, timeout=90, what="tenant-a's jobs")
    finally:
        stop_processes(*executors, timeout=15)
    assert all(process.returncode == 0 for process in executors)
    assert max(sampler.samples) == 4  # the cap is reached, and never passed
    assert len(sampler.samples) > 50
    # With 20 free slots and a cap of 4, tenant-b is done long before tenant-a's 40 x 0.4 s (on average) at 4 at a time.
    assert b_done_while_a_left is not None and b_done_while_a_left >= 20
    workers = set(Job.objects.filter(tenant_id="tenant-a").values_list("worker_id", flat=True))
    assert workers == {"w-1", "w-2"}  # both executors shared the capped tenant


def test_a_cap_holds_across_an_executor_crash_until_the_reconciler_returns_its_leases(receiver, tmp_path):
    TenantLimits.objects.create(tenant_id="tenant-a", max_running_jobs=3)
    now = db_now() - timedelta(seconds=1)
    # Priority 0 first inside tenant-a: the first executor fills the cap with calls that never answer.
    hanging = bulk_jobs(
        3, tenant_id="tenant-a", priority=0, url=receiver.url("/hang-on-attempt/1"), timeout_seconds=60,
        next_attempt_at=now,
    )  # fmt: skip
    quick = bulk_jobs(6, tenant_id="tenant-a", priority=5, url=receiver.url("/hook"), next_attempt_at=now)
    others = bulk_jobs(5, tenant_id="tenant-b", url=receiver.url("/hook"), next_attempt_at=now)
    first = _executor(receiver, "w-crashed")
    second = None
    try:
        with RunningSampler("tenant-a") as sampler:
            wait_until(lambda: len(receiver.received()) >= 8, timeout=60, what="the hanging calls and tenant-b's")
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            log = tmp_path / "second.log"
            second = _executor(receiver, "w-second", log_path=log)
            wait_until(lambda: "event=start" in log.read_text(), timeout=30, what="the second executor's start")
            # The crashed executor's three running rows still count: in ten polls it takes none of tenant-a.
            threading.Event().wait(2.0)
            assert _count("tenant-a", JobStatus.PENDING) == 6
            assert set(Job.objects.filter(id__in=hanging).values_list("worker_id", "status")) == {
                ("w-crashed", JobStatus.RUNNING)
            }
            # Leases run to the job's time + timeout + 30 s: move them into the past instead of waiting.
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL 1 SECOND WHERE worker_id = 'w-crashed'"
                )
            env = child_env(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}")
            assert start_manage("run_reconciler", "--once", env=env).wait(30) == 0
            wait_until(lambda: _count("tenant-a", JobStatus.SUCCEEDED) == 9, timeout=60, what="tenant-a's jobs")
    finally:
        first.kill() if first.poll() is None else None
        stop_processes(*([second] if second else []), timeout=15)
    assert max(sampler.samples) == 3 and len(sampler.samples) > 50
    assert Job.objects.filter(id__in=others, status=JobStatus.SUCCEEDED).count() == 5
    rows = Job.objects.filter(id__in=hanging + quick)
    assert {(row.status, row.worker_id) for row in rows} == {(JobStatus.SUCCEEDED, "w-second")}
    assert sorted(row.attempt for row in rows if row.id in set(hanging)) == [2, 2, 2]
