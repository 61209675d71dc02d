"""End to end: real run_executor / run_reconciler processes, a real receiver, the test database."""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import timedelta

import pytest
from django.db import connection

from jobs.models import Job, JobStatus
from tests.processes import child_env, start_manage, wait_until
from tests.receivers import Receiver
from tests.workers.executor_db import bulk_jobs, db_now

pytestmark = pytest.mark.django_db(transaction=True)


def _env(receiver: Receiver) -> dict[str, str]:
    return child_env(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}")


def _while_alive(process: subprocess.Popen, predicate):
    """`predicate` for wait_until that fails at once if the process under test has died."""

    def check():
        if process.poll() is not None:
            raise AssertionError(f"process exited early with {process.returncode}")
        return predicate()

    return check


def _statuses(ids):
    return {row.id: (row.status, row.attempt, row.worker_id) for row in Job.objects.filter(id__in=ids)}


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


def test_sigterm_stops_claiming_lets_calls_finish_within_the_grace_period_and_exits(receiver, tmp_path):
    quick = bulk_jobs(4, url=receiver.url("/slow/1"), next_attempt_at=db_now())
    stuck = bulk_jobs(2, url=receiver.url("/slow/30"), timeout_seconds=60, next_attempt_at=db_now())
    log = tmp_path / "executor.log"
    executor = start_manage(
        "run_executor",
        "--worker-id",
        "w-e2e",
        "--idle-seconds",
        "0.3",
        "--grace",
        "3",
        env=_env(receiver),
        log_path=log,
    )
    try:
        wait_until(_while_alive(executor, lambda: len(receiver.received()) == 6), what="six calls")
        later = bulk_jobs(3, url=receiver.url("/hook"), next_attempt_at=db_now())
        executor.send_signal(signal.SIGTERM)
        started = time.monotonic()
        executor.wait(15)
        took = time.monotonic() - started
    finally:
        if executor.poll() is None:
            executor.kill()
    output = log.read_text()
    assert executor.returncode == 0, output
    assert took < 3 + 3  # the grace period, plus the final result flush and interpreter exit
    statuses = _statuses(quick + stuck + later)
    assert all(statuses[i][0] == JobStatus.SUCCEEDED for i in quick)
    # Past the grace period: still claimed by a process that is gone, the reconciler's now.
    assert all(statuses[i] == (JobStatus.RUNNING, 1, "w-e2e") for i in stuck)
    # Claiming stopped at the signal.
    assert all(statuses[i] == (JobStatus.PENDING, 0, None) for i in later)
    assert "executor stopped" in output


def test_a_sigkilled_executors_jobs_are_returned_once_by_the_reconciler_and_completed_by_another(receiver):
    ids = bulk_jobs(5, url=receiver.url("/hang-on-attempt/1"), max_attempts=3, next_attempt_at=db_now())
    (last,) = bulk_jobs(1, url=receiver.url("/hang-on-attempt/1"), max_attempts=1, next_attempt_at=db_now())
    env = _env(receiver)
    first = start_manage("run_executor", "--worker-id", "w-killed", "--idle-seconds", "0.3", env=env)
    try:
        wait_until(_while_alive(first, lambda: len(receiver.received()) == 6), what="six calls")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    assert all(status == (JobStatus.RUNNING, 1, "w-killed") for status in _statuses([*ids, last]).values())

    # The leases run to the job's time + timeout + 30 s; move them into the past instead of waiting.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL 1 SECOND WHERE worker_id = 'w-killed'")
    assert start_manage("run_reconciler", "--once", env=env).wait(30) == 0
    statuses = _statuses([*ids, last])
    assert all(statuses[i] == (JobStatus.PENDING, 1, None) for i in ids)  # the attempt counted once
    assert statuses[last] == (JobStatus.DEAD, 1, None)  # its only attempt was the lost one

    second = start_manage("run_executor", "--worker-id", "w-second", "--idle-seconds", "0.3", env=env)
    try:
        wait_until(
            _while_alive(second, lambda: Job.objects.filter(id__in=ids, status=JobStatus.SUCCEEDED).count() == 5),
            what="the second executor's successes",
        )
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(15)
    rows = Job.objects.filter(id__in=ids)
    assert {(row.status, row.attempt, row.worker_id) for row in rows} == {(JobStatus.SUCCEEDED, 2, "w-second")}
    attempts = sorted(r.headers["X-Attempt"] for r in receiver.received())
    assert attempts == ["1"] * 6 + ["2"] * 5  # at least once: the lost attempt was really sent


def test_a_lease_that_has_not_expired_survives_a_reconciler_process(receiver):
    ids = bulk_jobs(2, url=receiver.url("/hook"), next_attempt_at=db_now() - timedelta(seconds=1))
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs SET status = 'running', worker_id = 'w-alive', attempt = 1,"
            " lease_expires_at = NOW(3) + INTERVAL 60 SECOND WHERE id IN (%s, %s)",
            [ids[0].bytes, ids[1].bytes],
        )
    assert start_manage("run_reconciler", "--once", env=_env(receiver)).wait(30) == 0
    assert all(status == (JobStatus.RUNNING, 1, "w-alive") for status in _statuses(ids).values())
