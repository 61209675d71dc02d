"""The claim on real MariaDB: what it takes, in which order, and that concurrent claims never overlap."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from bench.round1_claim import CLAIM_SELECT
from domain.ids import new_id
from jobs.models import Job, JobStatus
from jobs.queue import claim_due
from tests.concurrency import at_once
from tests.factories import make_job, make_task
from tests.workers.executor_db import bulk_jobs, db_now

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_claim_marks_due_jobs_running_counts_the_attempt_and_leases_from_the_jobs_time():
    task = make_task(timeout_seconds=20)
    job = make_job(task, next_attempt_at=timezone.now() - timedelta(seconds=5))
    (claimed,) = claim_due(worker_id="w-1", limit=10, lookahead_seconds=1)
    row = Job.objects.get(id=job.id)
    assert (row.status, row.worker_id, row.attempt) == (JobStatus.RUNNING, "w-1", 1)
    assert claimed.id == job.id and claimed.attempt == 1 and claimed.due_in < 0
    # Overdue: the lease counts from the claim (GREATEST picks NOW(3)), timeout + 30 s.
    lease = (row.lease_expires_at - row.started_at).total_seconds()
    assert 49.9 <= lease <= 50.5


def test_a_job_within_the_lookahead_is_claimed_early_and_its_lease_starts_at_its_own_time():
    task = make_task(timeout_seconds=10)
    due = db_now() + timedelta(seconds=3)
    job = make_job(task, next_attempt_at=due)
    (claimed,) = claim_due(worker_id="w-1", limit=10, lookahead_seconds=5)
    assert 2.0 < claimed.due_in <= 3.0
    assert Job.objects.get(id=job.id).lease_expires_at == due + timedelta(seconds=40)


def test_jobs_beyond_the_lookahead_are_left_pending():
    task = make_task()
    job = make_job(task, next_attempt_at=db_now() + timedelta(seconds=30))
    assert claim_due(worker_id="w-1", limit=10, lookahead_seconds=1) == []
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING


def test_the_claim_takes_priority_zero_first_then_the_oldest_and_stops_at_the_limit():
    now = db_now()
    low_old = bulk_jobs(1, priority=9, next_attempt_at=now - timedelta(seconds=60))
    mid = bulk_jobs(2, priority=5, next_attempt_at=now - timedelta(seconds=1))
    mid_older = bulk_jobs(1, priority=5, next_attempt_at=now - timedelta(seconds=10))
    high_new = bulk_jobs(1, priority=0, next_attempt_at=now)
    claimed = claim_due(worker_id="w-1", limit=3, lookahead_seconds=1)
    assert [job.id for job in claimed] == [*high_new, *mid_older, claimed[2].id]
    assert claimed[2].id in mid
    assert Job.objects.get(id=low_old[0]).status == JobStatus.PENDING


def test_jobs_that_are_not_pending_are_never_claimed():
    now = db_now() - timedelta(seconds=1)
    for status in (JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.DEAD):
        bulk_jobs(1, status=status, next_attempt_at=now)
    assert claim_due(worker_id="w-1", limit=10, lookahead_seconds=1) == []


def test_a_claim_carries_the_request_snapshot():
    task = make_task(http_url="https://example.com/x", http_headers={"X-A": "1"}, http_body="hi", secret_ref="tok")
    job = make_job(task, next_attempt_at=timezone.now() - timedelta(seconds=1))
    (claimed,) = claim_due(worker_id="w-1", limit=1, lookahead_seconds=1)
    assert (claimed.method, claimed.url, claimed.headers, claimed.body, claimed.secret_ref) == (
        "POST",
        "https://example.com/x",
        {"X-A": "1"},
        "hi",
        "tok",
    )
    assert claimed.task_id == task.id and claimed.scheduled_at == job.scheduled_at


def test_four_executors_over_5000_jobs_claim_disjoint_sets():
    ids = set(bulk_jobs(5000, next_attempt_at=db_now() - timedelta(seconds=1)))
    claims: dict[str, list] = {f"w-{n}": [] for n in range(4)}

    def executor(worker_id: str) -> None:
        while batch := claim_due(worker_id=worker_id, limit=100, lookahead_seconds=1):
            claims[worker_id].extend((job.id, job.attempt) for job in batch)

    at_once(executor, [(worker_id,) for worker_id in claims], timeout=120)
    everything = [job_id for batch in claims.values() for job_id, _ in batch]
    assert len(everything) == len(set(everything)) == 5000  # no job claimed twice
    assert set(everything) == ids
    assert all(attempt == 1 for batch in claims.values() for _, attempt in batch)
    assert sum(1 for batch in claims.values() if batch) >= 2  # they really ran side by side
    rows = Job.objects.filter(id__in=ids)
    owners = {row.id: row.worker_id for row in rows}
    for worker_id, batch in claims.items():
        assert all(owners[job_id] == worker_id for job_id, _ in batch)


def test_the_scheduler_inserts_jobs_while_a_claim_holds_its_locks_under_read_committed():
    """Under REPEATABLE READ the claim's gap locks made these inserts wait (measured: 0.7-8 s)."""
    task = make_task()
    holding = threading.Event()
    release = threading.Event()
    isolation: list[str] = []

    def claimer() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT @@tx_isolation")
                isolation.append(cursor.fetchone()[0])
                # The claim's SELECT over an empty due range of priority 5: gap locks under REPEATABLE READ.
                cursor.execute(CLAIM_SELECT, {"priority": 5, "lookahead_seconds": 3600, "limit": 100})
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=claimer)
    thread.start()
    assert holding.wait(10)
    # The scheduler's side: its own connection (autocommit), as another process would have.
    inserter = connections.create_connection("default")
    try:
        with inserter.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 3")
        started = time.monotonic()
        for offset in range(5):
            with inserter.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO jobs (id, tenant_id, task_id, scheduled_at, status, priority, attempt, max_attempts,"
                    " next_attempt_at, timeout_seconds, backoff_base_seconds, request_method, request_url,"
                    " request_headers, request_body, updated_at) VALUES (%s, 't', %s, NOW(6) + INTERVAL %s SECOND,"
                    " 'pending', 5, 0, 3, NOW(6) + INTERVAL %s SECOND, 30, 10, 'POST', 'https://example.com', '{}',"
                    " '', NOW(6))",
                    [new_id().bytes, task.id.bytes, offset, offset],
                )
        elapsed = time.monotonic() - started
    finally:
        release.set()
        thread.join(10)
        inserter.close()
    assert isolation == ["READ-COMMITTED"]
    assert elapsed < 1.0
    assert Job.objects.filter(task=task).count() == 5
