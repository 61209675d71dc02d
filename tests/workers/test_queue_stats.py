"""The queue's gauges on real MariaDB: bounded reads, one reporting replica, bounded tenant labels."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, connections
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from api.prometheus import exposition
from jobs.models import JobStatus
from tests.processes import wait_until
from tests.workers.executor_db import bulk_jobs, db_now
from workers import queue_stats
from workers.queue_stats import OTHER_TENANTS, QueueStats, dead_by_tenant, read_queue_figures

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
    figures = read_queue_figures().counts
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
    figures = read_queue_figures(cap=3).counts
    assert figures["pending"] == 3
    assert figures["oldest_due_pending_ms"] == 0


def test_dead_jobs_by_tenant_keep_the_top_tenants_and_fold_the_rest_into_other():
    now = db_now()
    for index, count in enumerate([5, 4, 3, 1, 1]):
        bulk_jobs(count, status=JobStatus.DEAD, tenant_id=f"tenant-{index}", finished_at=now)
    assert dead_by_tenant(read_queue_figures(tenants=2)) == {"tenant-0": 5, "tenant-1": 4, OTHER_TENANTS: 5}
    assert dead_by_tenant(read_queue_figures(tenants=10))[OTHER_TENANTS] == 0
    assert sum(dead_by_tenant(read_queue_figures(scan=6, tenants=1)).values()) == 6  # the scan bounds the rows read
    assert read_queue_figures(tenants=0).dead_top == {}  # METRICS_TENANT_LABELS off: no tenant read


def test_only_the_replica_holding_the_lock_reports_and_the_other_clears_its_gauges(settings):
    settings.METRICS_TENANT_LABELS = True
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


def _scrape() -> dict[tuple[str, tuple], float]:
    """The registry as Prometheus reads it: one exposition, parsed."""
    body, _ = exposition()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }


def test_the_dead_count_and_the_dead_jobs_by_tenant_come_from_one_moment(settings):
    # Another session kills one more job after every statement the reporter sends: figures
    # read by two statements disagree (the flaky end-to-end scrape saw `0.0 == 1`).
    settings.METRICS_TENANT_LABELS = True
    now = db_now()
    bulk_jobs(1, status=JobStatus.DEAD, tenant_id="tenant-x", finished_at=now)
    doomed = bulk_jobs(5, tenant_id="tenant-y")
    other = connections.create_connection("default")
    other.set_autocommit(True)

    def kill_one_after(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if doomed:
            with other.cursor() as cursor:
                cursor.execute(
                    "UPDATE jobs SET status = 'dead', finished_at = NOW(3) WHERE id = %s", [doomed.pop().bytes]
                )
        return result

    try:
        with connection.execute_wrapper(kill_one_after):
            assert QueueStats(interval_seconds=0).report()
        scraped = _scrape()
        by_tenant = {
            dict(labels)["tenant"]: value for (name, labels), value in scraped.items() if name == "jobsched_dead_jobs"
        }
        assert scraped[("jobsched_queue_jobs", (("status", "dead"),))] == sum(by_tenant.values())
    finally:
        other.close()
        connection.close()  # release this session's lock for the next test


def test_by_default_no_tenant_id_reaches_the_exposition():
    # /metrics has no authentication: tenant ids are published only when METRICS_TENANT_LABELS opts in.
    bulk_jobs(2, status=JobStatus.DEAD, tenant_id="tenant-secret-name", finished_at=db_now())
    try:
        assert QueueStats(interval_seconds=0).report()
        body, _ = exposition()
        assert _scrape()[("jobsched_queue_jobs", (("status", "dead"),))] == 2
        assert b"tenant-secret-name" not in body
        assert b"jobsched_dead_jobs{" not in body
    finally:
        connection.close()


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
