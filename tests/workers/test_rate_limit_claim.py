"""Rate limits inside the claim, on real MariaDB: grants within the bucket, held jobs pending and moved only."""

from __future__ import annotations

import itertools
from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.fairness import TenantCursor
from jobs.models import Job, JobStatus
from jobs.queue import OriginBlock, block_origins
from jobs.queue.claims import claim_fair_share
from ratelimits.models import OriginBucket
from ratelimits.services import rate_limit_delete, rate_limit_set
from tests.workers.executor_db import bulk_jobs, db_now

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = "https://hooks.example.com:443"
URL = "https://hooks.example.com/hook"


def claim(limit: int = 100):
    return claim_fair_share(worker_id="w-1", limit=limit, lookahead_seconds=1, cursor=TenantCursor())


def test_a_limited_origin_grants_its_burst_and_holds_the_rest_pending_untouched_but_for_their_time():
    rate_limit_set(tenant_id="tenant-a", origin=ORIGIN, per_second=10, burst=5)
    now = db_now() - timedelta(seconds=1)
    limited = bulk_jobs(30, tenant_id="tenant-a", url=URL, next_attempt_at=now)
    elsewhere = bulk_jobs(4, tenant_id="tenant-a", url="https://other.example/hook", next_attempt_at=now)
    others = bulk_jobs(10, tenant_id="tenant-b", url=URL, next_attempt_at=now)  # no limit of its own
    jobs = claim()
    taken = {job.id for job in jobs}
    assert len(taken & set(limited)) == 5
    assert set(elsewhere) <= taken and set(others) <= taken  # another origin, another tenant: not held
    held = Job.objects.filter(id__in=limited, status=JobStatus.PENDING).order_by("next_attempt_at")
    assert held.count() == 25
    # Held back, not failed: no attempt counted, the fence untouched, each told a time of its own.
    assert {(job.attempt, job.fence, job.error) for job in held} == {(0, 0, None)}
    times = [job.next_attempt_at for job in held]
    assert len(set(times)) == 25 and min(times) > now
    gaps = {round((later - earlier).total_seconds(), 3) for earlier, later in itertools.pairwise(times)}
    assert gaps == {0.1}  # 1 / per_second apart
    bucket = OriginBucket.objects.get(tenant_id="tenant-a", origin=ORIGIN)
    assert bucket.granted == 5 and bucket.held_until == times[-1]


def test_claims_never_grant_more_than_burst_plus_rate_times_the_span_of_their_times():
    rate_limit_set(tenant_id="tenant-a", origin=ORIGIN, per_second=20, burst=3)
    ids = bulk_jobs(40, tenant_id="tenant-a", url=URL, next_attempt_at=db_now() - timedelta(seconds=1))
    granted = 0
    for _ in range(8):  # held jobs come due again as the database's clock moves: claim them as they do
        granted += len(claim())
        with connection.cursor() as cursor:  # let time pass for the bucket without waiting: move the jobs back
            cursor.execute(
                "UPDATE jobs SET next_attempt_at = next_attempt_at - INTERVAL 1 SECOND WHERE status = 'pending'"
            )
    bucket = OriginBucket.objects.get(tenant_id="tenant-a")
    span = (bucket.last_granted_for - bucket.first_granted_for).total_seconds()
    assert bucket.granted == granted == Job.objects.filter(id__in=ids, status=JobStatus.RUNNING).count()
    assert granted <= 3 + 20 * span + 1e-6
    assert Job.objects.filter(id__in=ids).exclude(status__in=[JobStatus.RUNNING, JobStatus.PENDING]).count() == 0


def test_a_retry_after_block_holds_back_every_job_of_the_tenant_to_that_origin_until_it_ends():
    block_origins(blocks=[OriginBlock("tenant-a", ORIGIN, 120)])
    now = db_now() - timedelta(seconds=1)
    held = bulk_jobs(3, tenant_id="tenant-a", url=URL, next_attempt_at=now)
    free = bulk_jobs(2, tenant_id="tenant-b", url=URL, next_attempt_at=now)  # the block is tenant-a's only
    assert {job.id for job in claim()} == set(free)
    bucket = OriginBucket.objects.get(tenant_id="tenant-a", origin=ORIGIN)
    assert bucket.blocked_until.replace(tzinfo=UTC) > db_now() + timedelta(seconds=100)
    rows = Job.objects.filter(id__in=held)
    assert {(job.status, job.attempt, job.next_attempt_at) for job in rows} == {
        (JobStatus.PENDING, 0, bucket.blocked_until)
    }
    # A shorter block later never shortens it.
    block_origins(blocks=[OriginBlock("tenant-a", ORIGIN, 5)])
    assert OriginBucket.objects.get(id=bucket.id).blocked_until == bucket.blocked_until


def test_a_deleted_limit_and_an_ended_block_leave_no_bucket_and_the_jobs_go():
    limit, _ = rate_limit_set(tenant_id="tenant-a", origin=ORIGIN, per_second=1, burst=1)
    block_origins(blocks=[OriginBlock("tenant-a", "https://other.example:443", 1)])
    rate_limit_delete(tenant_id="tenant-a", limit_id=limit.id)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE origin_buckets SET blocked_until = NOW(3) - INTERVAL 1 SECOND")
    ids = bulk_jobs(5, tenant_id="tenant-a", url=URL, next_attempt_at=db_now() - timedelta(seconds=1))
    assert {job.id for job in claim()} == set(ids)
    assert OriginBucket.objects.count() == 0  # the tenant costs the claim nothing more from now on


def test_a_claim_for_tenants_without_buckets_sends_no_statement_more_than_the_walk():
    rate_limit_set(tenant_id="tenant-z", origin=ORIGIN, per_second=1, burst=1)  # someone else's limit
    ids = bulk_jobs(5, tenant_id="tenant-a", url=URL, next_attempt_at=db_now() - timedelta(seconds=1))
    with CaptureQueriesContext(connection) as queries:
        assert {job.id for job in claim()} == set(ids)
    pacing = [query["sql"] for query in queries.captured_queries if "origin_buckets" in query["sql"]]
    assert pacing and all("DISTINCT pending_tenant" in sql for sql in pacing)  # the walk's EXISTS, nothing else
