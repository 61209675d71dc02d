"""The queue's gauges on real MariaDB: bounded reads, one reporting replica, bounded tenant labels."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, connections
from prometheus_client import REGISTRY

from jobs.models import JobStatus
from tests.processes import wait_until
from tests.workers.executor_db import bulk_jobs, db_now
from workers import queue_stats
from workers.queue_stats import OTHER_TENANTS, QueueStats, read_dead_by_tenant, read_queue_figures

pytestmark = pytest.mark.django_db(transaction=True)


def _gauge(name, **labels):
    return REGISTRY.get_sample_value(name, labels)


def test_the_figures_count_each_status_and_the_oldest_due_pending_age():
    now = db_now()
    bulk_jobs(3, next_attempt_at=now - timedelta(seconds=90), priority=7)
    bulk_jobs(2, next_attempt_at=now - timedelta(seconds=30), priority=0)
    bulk_jobs(4, next_attempt_at=now + timedelta(hours=1))  # pending, not due
    bulk_jobs(1, status=JobStatus.RUNNING, worker_id="w", lease_expires_at=now - timedelta(seconds=5))
    bulk_jobs(2, status=JobStatus.RUNNING, worker_id="w", lease_expires_at=now + timedelta(minutes=5))
    bulk_jobs(5, status=JobStatus.SUCCEEDED, finished_at=now)
    figures = read_queue_figures()
    assert {k: figures[k] for k in ("pending", "running", "succeeded", "dead", "expired_leases")} == {
        "pending": 9,
        "running": 3,
        "succeeded": 5,
        "dead": 0,
        "expired_leases": 1,
    }
    assert 90_000 <= figures["oldest_due_pending_ms"] < 100_000


def test_nothing_due_is_an_age_of_zero_and_counts_stop_at_the_cap():
    bulk_jobs(5, next_attempt_at=db_now() + timedelta(hours=1))
    figures = read_queue_figures(cap=3)
    assert figures["pending"] == 3
    assert figures["oldest_due_pending_ms"] == 0


def test_dead_jobs_by_tenant_keep_the_top_tenants_and_fold_the_rest_into_other():
    now = db_now()
    for index, count in enumerate([5, 4, 3, 1, 1]):
        bulk_jobs(count, status=JobStatus.DEAD, tenant_id=f"tenant-{index}", finished_at=now)
    assert read_dead_by_tenant(tenants=2) == {"tenant-0": 5, "tenant-1": 4, OTHER_TENANTS: 5}
    assert read_dead_by_tenant(tenants=10)[OTHER_TENANTS] == 0
    assert sum(read_dead_by_tenant(scan=6, tenants=1).values()) == 6  # the scan bounds the rows read


def test_only_the_replica_holding_the_lock_reports_and_the_other_clears_its_gauges():
    bulk_jobs(2, status=JobStatus.DEAD, tenant_id="tenant-x", finished_at=db_now())
    other = connections.create_connection("default")  # another replica's session
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT GET_LOCK(%s, 0)", [queue_stats.LOCK_NAME])
            assert cursor.fetchone() == (1,)
        stats = QueueStats(interval_seconds=0)
        assert not stats.report()
        assert _gauge("jobsched_queue_stats_reporter") == 0
        assert _gauge("jobsched_dead_jobs", tenant="tenant-x") is None
        other.close()  # that replica dies: its lock goes with its session (the server frees it a moment later)
        wait_until(stats.report, timeout=5, what="this replica taking over the lock")
        assert _gauge("jobsched_queue_stats_reporter") == 1
        assert _gauge("jobsched_queue_jobs", status="dead") == 2
        assert _gauge("jobsched_dead_jobs", tenant="tenant-x") == 2
        assert stats.report()  # still the holder: the lock is not taken twice
    finally:
        other.close()
        connection.close()  # release this session's lock for the next test


def test_reports_at_most_once_per_interval():
    clock = [0.0]
    stats = QueueStats(interval_seconds=15, clock=lambda: clock[0])
    try:
        assert stats.maybe_report()
        clock[0] = 14.0
        assert not stats.maybe_report()
        clock[0] = 15.0
        assert stats.maybe_report()
    finally:
        connection.close()
