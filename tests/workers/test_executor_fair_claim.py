"""The fair claim on real MariaDB: slots shared among tenants, priority inside a tenant, caps that hold."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, connections

from jobs.fairness import TenantCursor
from jobs.models import Job, JobStatus
from jobs.queue import claims
from jobs.queue.claims import claim_due, claim_fair_share
from tasks.models import TenantLimits
from tests.concurrency import at_once
from tests.workers.executor_db import bulk_jobs, db_now

pytestmark = pytest.mark.django_db(transaction=True)


def claim(limit: int, cursor: TenantCursor | None = None, **kwargs):
    return claim_fair_share(
        worker_id="w-1", limit=limit, lookahead_seconds=1, cursor=cursor or TenantCursor(), **kwargs
    )


def per_tenant(jobs) -> Counter:
    return Counter(job.tenant_id for job in jobs)


def test_a_burst_of_one_tenant_does_not_take_the_slots_of_tenants_whose_jobs_sort_after_it():
    now = db_now() - timedelta(seconds=1)
    bulk_jobs(100, tenant_id="tenant-a", next_attempt_at=now - timedelta(seconds=30))  # older, inserted first
    bulk_jobs(3, tenant_id="tenant-b", next_attempt_at=now)
    bulk_jobs(3, tenant_id="tenant-c", next_attempt_at=now)
    jobs = claim(10)
    assert per_tenant(jobs) == {"tenant-a": 4, "tenant-b": 3, "tenant-c": 3}
    assert Job.objects.filter(status=JobStatus.RUNNING).count() == 10


def test_slots_a_tenant_cannot_use_go_to_the_tenants_that_have_more_due_jobs():
    now = db_now() - timedelta(seconds=1)
    bulk_jobs(600, tenant_id="tenant-a", next_attempt_at=now)
    for tenant in "bcdefghijk":
        bulk_jobs(10, tenant_id=f"tenant-{tenant}", next_attempt_at=now)
    jobs = claim(500)
    counts = per_tenant(jobs)
    assert len(jobs) == 500
    assert counts["tenant-a"] == 400 and all(counts[f"tenant-{t}"] == 10 for t in "bcdefghijk")


def test_the_claimed_jobs_come_back_interleaved_across_tenants():
    now = db_now() - timedelta(seconds=1)
    bulk_jobs(5, tenant_id="tenant-a", next_attempt_at=now)
    bulk_jobs(2, tenant_id="tenant-b", next_attempt_at=now)
    order = [job.tenant_id for job in claim(7)]
    assert order[:4] == ["tenant-a", "tenant-b", "tenant-a", "tenant-b"]
    assert order[4:] == ["tenant-a"] * 3


def test_priority_orders_jobs_inside_a_tenant_but_never_one_tenant_before_another():
    now = db_now() - timedelta(seconds=1)
    urgent = set(bulk_jobs(5, tenant_id="tenant-a", priority=0, next_attempt_at=now))
    bulk_jobs(5, tenant_id="tenant-a", priority=9, next_attempt_at=now - timedelta(seconds=60))
    bulk_jobs(5, tenant_id="tenant-b", priority=9, next_attempt_at=now)
    jobs = claim(4)
    assert per_tenant(jobs) == {"tenant-a": 2, "tenant-b": 2}
    # Within tenant-a, priority 0 comes first even though its priority 9 jobs are older.
    assert {job.id for job in jobs if job.tenant_id == "tenant-a"} <= urgent


def test_with_more_tenants_than_slots_the_round_robin_cursor_gives_each_tenant_its_turn():
    now = db_now() - timedelta(seconds=1)
    for n in range(5):
        bulk_jobs(3, tenant_id=f"tenant-{n}", next_attempt_at=now)
    cursor = TenantCursor()
    turns = [sorted(per_tenant(claim(2, cursor))) for _ in range(3)]
    assert turns == [["tenant-0", "tenant-1"], ["tenant-2", "tenant-3"], ["tenant-0", "tenant-4"]]
    assert cursor.after == "tenant-0"


def test_the_walk_wraps_around_to_the_tenants_before_the_cursor():
    now = db_now() - timedelta(seconds=1)
    bulk_jobs(2, tenant_id="tenant-a", next_attempt_at=now)
    bulk_jobs(2, tenant_id="tenant-z", next_attempt_at=now)
    jobs = claim(4, TenantCursor(after="tenant-m"))
    assert per_tenant(jobs) == {"tenant-a": 2, "tenant-z": 2}


def test_tenants_with_only_future_jobs_are_walked_past_and_get_nothing():
    now = db_now()
    for tenant in ("tenant-b", "tenant-c", "tenant-d"):
        bulk_jobs(2, tenant_id=tenant, next_attempt_at=now + timedelta(hours=1))
    bulk_jobs(2, tenant_id="tenant-e", next_attempt_at=now - timedelta(seconds=1))
    jobs = claim(10)
    assert per_tenant(jobs) == {"tenant-e": 2}
    assert Job.objects.filter(status=JobStatus.PENDING).count() == 6


def test_the_walk_is_bounded_and_the_next_claim_continues_where_it_stopped(monkeypatch):
    monkeypatch.setattr(claims, "WALK_MAX_TENANTS", 2)
    now = db_now()
    for tenant in ("tenant-b", "tenant-c"):
        bulk_jobs(1, tenant_id=tenant, next_attempt_at=now + timedelta(hours=1))
    bulk_jobs(1, tenant_id="tenant-d", next_attempt_at=now - timedelta(seconds=1))
    cursor = TenantCursor()
    assert claim(10, cursor) == []
    assert cursor.after == "tenant-c"
    assert per_tenant(claim(10, cursor)) == {"tenant-d": 1}


def test_an_empty_queue_claims_nothing_and_leaves_the_cursor():
    cursor = TenantCursor(after="tenant-q")
    assert claim(10, cursor) == []
    assert claim_due(worker_id="w-1", limit=0, lookahead_seconds=1) == []
    assert cursor.after == "tenant-q"


def test_a_capped_tenant_gets_only_its_headroom_counting_jobs_already_running_anywhere():
    now = db_now() - timedelta(seconds=1)
    TenantLimits.objects.create(tenant_id="tenant-a", max_running_jobs=3)
    bulk_jobs(1, tenant_id="tenant-a", status=JobStatus.RUNNING, worker_id="w-other", next_attempt_at=now)
    bulk_jobs(10, tenant_id="tenant-a", next_attempt_at=now)
    bulk_jobs(10, tenant_id="tenant-b", next_attempt_at=now)
    assert per_tenant(claim(10)) == {"tenant-a": 2, "tenant-b": 8}
    assert claim(10) and Job.objects.filter(tenant_id="tenant-a", status=JobStatus.RUNNING).count() == 3


def test_the_default_cap_from_settings_applies_to_tenants_without_an_override(settings):
    settings.TENANT_MAX_RUNNING_JOBS = 2
    now = db_now() - timedelta(seconds=1)
    TenantLimits.objects.create(tenant_id="tenant-b", max_running_jobs=5)
    bulk_jobs(10, tenant_id="tenant-a", next_attempt_at=now)
    bulk_jobs(10, tenant_id="tenant-b", next_attempt_at=now)
    assert per_tenant(claim(20)) == {"tenant-a": 2, "tenant-b": 5}


def test_when_every_tenant_is_at_its_cap_nothing_is_claimed(settings):
    settings.TENANT_MAX_RUNNING_JOBS = 1
    now = db_now() - timedelta(seconds=1)
    for tenant in ("tenant-a", "tenant-b"):
        bulk_jobs(1, tenant_id=tenant, status=JobStatus.RUNNING, worker_id="w-other", next_attempt_at=now)
        bulk_jobs(3, tenant_id=tenant, next_attempt_at=now)
    cursor = TenantCursor()
    assert claim(10, cursor) == []
    assert Job.objects.filter(status=JobStatus.PENDING).count() == 6
    # Capped tenants are not "waiting for a slot": the cursor moves past them.
    assert cursor.after == "tenant-b"


def test_concurrent_claims_for_a_capped_tenant_never_pass_its_cap():
    now = db_now() - timedelta(seconds=1)
    TenantLimits.objects.create(tenant_id="tenant-a", max_running_jobs=5)
    bulk_jobs(200, tenant_id="tenant-a", next_attempt_at=now)

    def executor(worker_id: str) -> None:
        for _ in range(5):
            claim_fair_share(worker_id=worker_id, limit=5, lookahead_seconds=1, cursor=TenantCursor())

    at_once(executor, [(f"w-{n}",) for n in range(4)])
    # Each claim locks the tenant's limits row before counting: 4 x 5 claims of 5, yet 5 running.
    assert Job.objects.filter(tenant_id="tenant-a", status=JobStatus.RUNNING).count() == 5


def test_the_round_1_claim_the_bench_compares_with_is_priority_first_across_tenants():
    from bench.round1_claim import claim_priority_first

    now = db_now() - timedelta(seconds=1)
    bulk_jobs(20, tenant_id="tenant-a", priority=0, next_attempt_at=now)
    bulk_jobs(5, tenant_id="tenant-b", priority=5, next_attempt_at=now - timedelta(seconds=60))
    jobs = claim_priority_first(worker_id="w-1", limit=10, lookahead_seconds=1)
    assert per_tenant(jobs) == {"tenant-a": 10}
    assert per_tenant(claim_due(worker_id="w-1", limit=10, lookahead_seconds=1))["tenant-b"] == 5


def test_a_claim_chosen_as_a_deadlock_victim_is_run_again_and_other_errors_are_not(monkeypatch):
    from django.db.utils import OperationalError

    bulk_jobs(4, tenant_id="tenant-a", next_attempt_at=db_now() - timedelta(seconds=1))
    real = claims._claim_fair_share_once
    failures = [OperationalError(1213, "Deadlock found"), OperationalError(2013, "Lost connection")]
    calls = []

    def once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise failures[0]
        return real(**kwargs)

    monkeypatch.setattr(claims, "_claim_fair_share_once", once)
    assert len(claim(2)) == 2 and len(calls) == 2  # rolled back whole, then claimed once

    def lost(**kwargs):
        raise failures[1]

    monkeypatch.setattr(claims, "_claim_fair_share_once", lost)
    with pytest.raises(OperationalError):
        claim(10)


def test_the_probe_and_the_walk_read_uncommitted_rows_before_the_claims_transaction(monkeypatch):
    # Dirty hints: under READ COMMITTED their index reads checked every entry against the rows other
    # claims were changing (35 us of the server's CPU per job in `make bench`, 11 this way).
    bulk_jobs(3, tenant_id="tenant-a", next_attempt_at=db_now() - timedelta(seconds=1))
    sent: list[tuple[str, bool]] = []

    def record(execute, sql, params, many, context):
        sent.append((statement_kind(sql), connection.in_atomic_block))
        return execute(sql, params, many, context)

    def statement_kind(sql: str) -> str:
        if "AS priority" in sql:
            return "probe"
        if "DISTINCT pending_tenant" in sql:
            return "walk"
        return "dirty next" if sql.startswith("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED") else "other"

    def take_and_read_the_level(db, **kwargs):
        db.execute("SELECT COUNT(*) FROM jobs WHERE id = 0x00")  # InnoDB lists the transaction once it reads
        db.execute(
            "SELECT trx_isolation_level FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()"
        )
        levels.append(db.fetchone()[0])
        return real_take(db, **kwargs)

    levels: list[str] = []
    real_take = claims._take
    monkeypatch.setattr(claims, "_take", take_and_read_the_level)
    with connection.execute_wrapper(record):
        assert len(claim(2)) == 2  # a fresh cursor: one pass of the walk
    assert levels == ["READ COMMITTED"]  # the claim's own transaction: the dirty reads' level did not leak
    assert sent[:4] == [("dirty next", False), ("probe", False), ("dirty next", False), ("walk", False)]
    assert sent[4:] and all(in_transaction for _, in_transaction in sent[4:])  # the take and the mark
    assert "dirty next" not in {kind for kind, _ in sent[4:]}


def test_a_dirty_hint_never_claims_a_job_another_transaction_is_changing_and_never_waits_for_it():
    now = db_now() - timedelta(seconds=1)
    later = bulk_jobs(1, tenant_id="tenant-x", next_attempt_at=now + timedelta(hours=1))
    claimed_elsewhere = bulk_jobs(2, tenant_id="tenant-y", next_attempt_at=now)
    free = bulk_jobs(2, tenant_id="tenant-z", next_attempt_at=now)
    other = connections.create_connection("default")  # another executor's, or the reconciler's, session
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            # Uncommitted: tenant-x's job made due (as the reconciler returning a lease), tenant-y's
            # marked running (as another executor's claim). The dirty walk sees both.
            cursor.execute(
                "UPDATE jobs SET next_attempt_at = NOW(3) - INTERVAL 1 SECOND WHERE id = %s", [later[0].bytes]
            )
            cursor.execute(
                "UPDATE jobs SET status = 'running', worker_id = 'w-other' WHERE id IN (%s, %s)",
                [job_id.bytes for job_id in claimed_elsewhere],
            )
        # The dirty walk sees what the other transaction did; a committed read would not.
        with connection.cursor() as cursor:
            dirty = dict(claims._Walk(cursor, start="", levels=[5], lookahead_seconds=1).next_chunk(64, dirty=True))
            committed = dict(claims._Walk(cursor, start="", levels=[5], lookahead_seconds=1).next_chunk(64))
        assert dirty["tenant-x"] is not None and "tenant-y" not in dirty  # running: no pending entry
        assert (committed["tenant-x"], committed["tenant-y"] is not None) == (None, True)
        started = time.monotonic()
        jobs = claim(10)
        elapsed = time.monotonic() - started
        assert {job.id for job in jobs} == set(free)  # the rows being changed are passed over
        assert elapsed < 1.5  # SKIP LOCKED: no lock wait (one lasts innodb_lock_wait_timeout, 50 s)
        other.rollback()  # tenant-y's claim never happened: its jobs are due still
        assert {job.id for job in claim(10)} == set(claimed_elsewhere)
        with other.cursor() as cursor:
            cursor.execute(
                "UPDATE jobs SET next_attempt_at = NOW(3) - INTERVAL 1 SECOND WHERE id = %s", [later[0].bytes]
            )
        other.commit()
    finally:
        other.close()
    assert {job.id for job in claim(10)} == set(later)


def test_a_tenant_whose_first_due_job_is_locked_gets_the_next_one_in_the_same_claim():
    # Shares of one are taken by the walk's keys; a key whose row another transaction holds (or,
    # read dirty, has not committed) yields nothing, which says nothing of the jobs behind it.
    now = db_now() - timedelta(seconds=1)
    first, second = bulk_jobs(1, tenant_id="tenant-a", next_attempt_at=now - timedelta(seconds=5)) + bulk_jobs(
        1, tenant_id="tenant-a", next_attempt_at=now
    )
    (other_tenants,) = bulk_jobs(1, tenant_id="tenant-b", next_attempt_at=now)
    other = connections.create_connection("default")
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", [first.bytes])
        jobs = claim(2)
        other.rollback()
    finally:
        other.close()
    assert {job.id for job in jobs} == {second, other_tenants}
    assert Job.objects.get(id=first).status == JobStatus.PENDING


def _tables_read(node) -> list[tuple[str | None, float]]:
    """(index, rows read in all loops) of each table in an ANALYZE FORMAT=JSON plan."""
    found = []
    if isinstance(node, dict):
        table = node.get("table")
        if isinstance(table, dict):
            found.append((table.get("key"), table.get("r_rows", 0) * table.get("r_loops", 1)))
        for value in node.values():
            found.extend(_tables_read(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_tables_read(value))
    return found


def test_the_walk_reads_a_few_entries_per_tenant_through_the_forced_indexes():
    # The plan MariaDB picked in `make bench` read every other tenant's due jobs through
    # jobs_claim_idx before reaching this tenant's first one (4.4 million rows per walk); the
    # walk forces its indexes, so it reads a few index entries per tenant, never their due jobs.
    now = db_now() - timedelta(seconds=1)
    for tenant in "abcd":
        bulk_jobs(200, tenant_id=f"tenant-{tenant}", next_attempt_at=now)
    query = claims._statement("fair_walk", [5], bound="")
    with connection.cursor() as cursor:
        # Statistics as a steady table has them: right after 800 inserts, in a suite's database
        # whose table held other tests' rows, InnoDB's automatic recount may not have run yet, and
        # with the old counts the DISTINCT was planned as a full index scan (820 rows, seen once in CI).
        cursor.execute("ANALYZE TABLE jobs")
        cursor.fetchall()
        cursor.execute(
            "ANALYZE FORMAT=JSON " + query, {"after": "", "until": None, "limit": 64, "lookahead_seconds": 1}
        )
        reads = _tables_read(json.loads(cursor.fetchone()[0]))
    assert "jobs_tenant_due_idx" in {key for key, _ in reads}
    assert not {key for key, _ in reads} & {"jobs_claim_idx", "jobs_dlq_idx"}
    assert sum(rows for _, rows in reads) < 50  # 4 tenants, 800 due jobs
