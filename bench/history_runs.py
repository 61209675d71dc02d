"""The runs behind `python -m bench.history` (imported after django.setup())."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from bench.scheduler import _use_bench_database
from domain.ids import new_id
from domain.records import JobRecord
from history.base import HistoryStore
from history.cassandra_store import CassandraHistoryStore, connect, schema_statements
from history.sql_store import SqlHistoryStore
from jobs.models import Job, JobStatus
from jobs.selectors import task_history
from tasks.models import Task
from tests.factories import make_task
from workers.archiver import DEFAULT_BATCH_SIZE, Archiver

TENANT = "bench-tenant"
INSERT_CHUNK = 2_000
WRITE_CHUNK = 5_000


@dataclass
class Context:
    stores: dict[str, HistoryStore] = field(default_factory=dict)
    cassandra_session: Any = None
    keyspace: str = ""
    ttl_seconds: int = 0
    versions: dict[str, str] = field(default_factory=dict)


def prepare(*, stores: list[str], database: str, keyspace: str, ttl_seconds: int) -> Context:
    """Point at the bench database and keyspace, both empty, and build the stores."""
    _use_bench_database(database)
    context = Context(keyspace=keyspace, ttl_seconds=ttl_seconds)
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        context.versions["mysql"] = cursor.fetchone()[0]
    if "sql" in stores:
        context.stores["sql"] = SqlHistoryStore(ttl_seconds=ttl_seconds)
    if "cassandra" in stores:
        if not settings.CASSANDRA_HOSTS:
            raise SystemExit("CASSANDRA_HOSTS is empty: start the node (make cassandra) and set it")
        session = connect(hosts=list(settings.CASSANDRA_HOSTS), keyspace=None)
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        replication = {"class": "SimpleStrategy", "replication_factor": 1}
        for statement in schema_statements(keyspace=keyspace, ttl_seconds=ttl_seconds, replication=replication):
            session.execute(statement)
        session.set_keyspace(keyspace)
        context.cassandra_session = session
        context.versions["cassandra"] = session.execute("SELECT release_version FROM system.local").one()[0]
        context.stores["cassandra"] = CassandraHistoryStore(session=session, ttl_seconds=ttl_seconds)
    return context


def _empty_mysql() -> None:
    with connection.cursor() as cursor:
        for table in ("jobs", "tasks", "job_history"):
            cursor.execute(f"TRUNCATE TABLE {table}")


def _empty_cassandra(context: Context) -> None:
    if context.cassandra_session is not None:
        for table in ("job_history", "job_by_id"):
            context.cassandra_session.execute(f"TRUNCATE {table}")


def _finished_jobs(task: Task, count: int) -> None:
    """`count` succeeded jobs that finished two hours ago, one minute apart in scheduled_at."""
    now = timezone.now()
    finished = now - timedelta(hours=2)
    for start in range(0, count, INSERT_CHUNK):
        Job.objects.bulk_create(
            [
                Job(
                    id=new_id(),
                    tenant_id=task.tenant_id,
                    task=task,
                    scheduled_at=now - timedelta(minutes=i + 180),
                    status=JobStatus.SUCCEEDED,
                    priority=task.priority,
                    attempt=1,
                    max_attempts=task.max_attempts,
                    next_attempt_at=now - timedelta(minutes=i + 180),
                    timeout_seconds=task.timeout_seconds,
                    backoff_base_seconds=task.backoff_base_seconds,
                    request_method=task.http_method,
                    request_url=task.http_url,
                    request_headers={},
                    request_body="",
                    started_at=finished - timedelta(seconds=1),
                    finished_at=finished,
                    http_status=200,
                    response_body="ok",
                )
                for i in range(start, min(count, start + INSERT_CHUNK))
            ]
        )


def run_archiver(context: Context, name: str, *, jobs: int, batch_size: int | None) -> dict:
    """Archive `jobs` finished jobs into store `name`; wall time from the first step to an empty queue."""
    _empty_mysql()
    _empty_cassandra(context)
    task = make_task(tenant_id=TENANT)
    _finished_jobs(task, jobs)
    archiver = Archiver(store=context.stores[name], batch_size=batch_size or DEFAULT_BATCH_SIZE)
    started = time.perf_counter()
    moved = 0
    while True:
        run = archiver.archive_once()
        moved += run.deleted
        if not run.full:
            break
    seconds = time.perf_counter() - started
    left = Job.objects.count()
    if left or moved != jobs:
        raise SystemExit(f"[{name}] archiver left {left} jobs and moved {moved} of {jobs}")
    return {
        "jobs": jobs,
        "batch_size": archiver.batch_size,
        "seconds": round(seconds, 2),
        "jobs_per_second": round(jobs / seconds),
    }


def _history(task: Task, count: int, days: int) -> list[JobRecord]:
    now = datetime.now(UTC).replace(microsecond=0)
    step = timedelta(days=days) / count
    records = []
    for i in range(count):
        scheduled = now - timedelta(minutes=5) - step * i
        records.append(
            JobRecord(
                tenant_id=task.tenant_id,
                task_id=task.id,
                id=new_id(),
                scheduled_at=scheduled,
                status="succeeded" if i % 20 else "dead",
                attempt=1 if i % 20 else 5,
                max_attempts=5,
                priority=5,
                request_method="POST",
                request_url=task.http_url,
                http_status=200 if i % 20 else 500,
                error=None if i % 20 else "HTTP 500",
                response_body="ok",
                started_at=scheduled + timedelta(milliseconds=10),
                finished_at=scheduled + timedelta(milliseconds=250),
            )
        )
    return records


def run_reads(context: Context, name: str, *, history_jobs: int, days: int, limit: int, samples: int) -> dict:
    """Page latencies (ms lists) for a task with `history_jobs` archived jobs over `days` days."""
    _empty_mysql()
    _empty_cassandra(context)
    store = context.stores[name]
    task = make_task(tenant_id=TENANT)
    records = _history(task, history_jobs, days)
    started = time.perf_counter()
    for start in range(0, len(records), WRITE_CHUNK):
        store.write_many(records[start : start + WRITE_CHUNK])
    write_seconds = time.perf_counter() - started
    if len(store.page(TENANT, task.id, records[-limit - 1].position, limit)) != limit:
        raise SystemExit(f"[{name}] the oldest page is short: rows outside the store's lookback?")

    def timed(read) -> float:
        begun = time.perf_counter()
        page = read()
        elapsed = (time.perf_counter() - begun) * 1000
        if len(page) != limit:
            raise SystemExit(f"[{name}] a page held {len(page)} rows, not {limit}")
        return elapsed

    positions = [records[random.randrange(0, len(records) - limit - 1)].position for _ in range(samples)]
    timed(lambda: store.page(TENANT, task.id, None, limit))  # warm: connection, prepared statements
    first = [timed(lambda: store.page(TENANT, task.id, None, limit)) for _ in range(samples)]
    deep = [timed(lambda p=p: store.page(TENANT, task.id, p, limit)) for p in positions]

    def merged(position):
        page, _ = task_history(tenant_id=TENANT, task_id=task.id, before=position, limit=limit, store=store)
        return page

    api_first = [timed(lambda: merged(None)) for _ in range(samples)]
    api_deep = [timed(lambda p=p: merged(p)) for p in positions]
    return {
        "seed_write_s": round(write_seconds, 1),
        "store_first_page": first,
        "store_random_page": deep,
        "task_history_first_page": api_first,
        "task_history_random_page": api_deep,
    }
