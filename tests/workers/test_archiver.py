"""The archiver moves exactly the eligible jobs, history first, and a crash or a retry never loses one."""

from __future__ import annotations

import datetime as dt
import subprocess
import threading
import uuid

import pytest
from django.db import connections
from django.utils import timezone

from history.base import HistoryUnavailable
from history.memory import InMemoryHistoryStore
from history.models import HistoryEntry
from history.sql_store import SqlHistoryStore
from history.stores import set_history_store
from jobs.models import Job, JobStatus, RunRequest
from jobs.services import RetryOutcome, job_retry
from tests.factories import finished_job, make_job, make_task
from tests.history.conftest import make_record
from tests.processes import child_env, run_manage
from workers.archiver import Archiver

pytestmark = pytest.mark.django_db

HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


class SimulatedCrash(BaseException):
    """The process dies: not an Exception, so nothing on the way up handles it."""


class CrashAfterHistoryWrite(InMemoryHistoryStore):
    crash = True

    def write_many(self, records):
        super().write_many(records)
        if self.crash:
            raise SimulatedCrash


def test_the_archiver_moves_exactly_the_eligible_jobs():
    task = make_task()
    other_tenant = make_task(tenant_id="tenant-b")
    eligible = [
        finished_job(task, JobStatus.SUCCEEDED, 2 * HOUR),
        finished_job(task, JobStatus.DEAD, 15 * DAY),
        finished_job(other_tenant, JobStatus.SUCCEEDED, 3 * HOUR),
    ]
    staying = [
        finished_job(task, JobStatus.SUCCEEDED, 30 * dt.timedelta(minutes=1)),
        finished_job(task, JobStatus.DEAD, 13 * DAY),
        finished_job(task, JobStatus.DEAD, 2 * HOUR),  # still retryable from the DLQ
        make_job(task, scheduled_at=timezone.now() + HOUR),
        make_job(
            task, status=JobStatus.RUNNING, attempt=1, scheduled_at=timezone.now() - HOUR, started_at=timezone.now()
        ),
        # A pending retry of a job that failed long ago has no finished_at.
        make_job(task, attempt=2, scheduled_at=timezone.now() - 20 * DAY),
    ]
    store = SqlHistoryStore()

    run = Archiver(store=store).archive_once()

    assert (run.read, run.deleted, run.kept) == (3, 3, 0)
    assert set(Job.objects.values_list("id", flat=True)) == {job.id for job in staying}
    assert {entry.job_id for entry in HistoryEntry.objects.all()} == {job.id for job in eligible}
    dead = store.get("tenant-a", eligible[1].id)
    assert (dead.status, dead.attempt, dead.error, dead.http_status) == ("dead", 3, "HTTP 500", 500)
    assert dead.scheduled_at == eligible[1].scheduled_at
    assert dead.finished_at == eligible[1].finished_at.replace(
        microsecond=eligible[1].finished_at.microsecond // 1000 * 1000
    )
    assert store.get("tenant-b", eligible[2].id).task_id == other_tenant.id


def test_nothing_to_archive_is_an_idle_step(store):
    finished_job(make_task(), JobStatus.SUCCEEDED, dt.timedelta(minutes=5))

    assert Archiver(store=store).step() is False
    assert store.all() == []


def test_the_ages_come_from_the_settings(settings, store):
    settings.ARCHIVE_SUCCEEDED_AFTER_SECONDS = 60
    settings.ARCHIVE_DEAD_AFTER_SECONDS = 3 * 3600
    task = make_task()
    moved = [
        finished_job(task, JobStatus.SUCCEEDED, 2 * dt.timedelta(minutes=1)),
        finished_job(task, JobStatus.DEAD, 4 * HOUR),
    ]
    kept = finished_job(task, JobStatus.DEAD, 2 * HOUR)

    Archiver(store=store).archive_once()

    assert {r.id for r in store.all()} == {job.id for job in moved}
    assert list(Job.objects.values_list("id", flat=True)) == [kept.id]


def test_batches_are_bounded_and_a_full_batch_asks_for_another_step(store):
    task = make_task()
    jobs = [finished_job(task, JobStatus.SUCCEEDED, 2 * HOUR, scheduled_minutes_ago=200 + i) for i in range(5)]
    archiver = Archiver(store=store, batch_size=2)

    steps = [archiver.step() for _ in range(4)]

    assert steps == [True, True, False, False]
    assert {r.id for r in store.all()} == {job.id for job in jobs}
    assert not Job.objects.exists()


def test_a_history_store_that_fails_deletes_nothing(store):
    job = finished_job(make_task(), JobStatus.SUCCEEDED, 2 * HOUR)
    store.fail_with = HistoryUnavailable("cluster down")

    assert Archiver(store=store).step() is False

    assert Job.objects.filter(id=job.id).exists()


def test_a_crash_after_the_history_write_leaves_the_job_readable_once_and_the_next_run_finishes(tenant_client):
    store = CrashAfterHistoryWrite()
    set_history_store(store)
    try:
        task = make_task()
        job = finished_job(task, JobStatus.SUCCEEDED, 2 * HOUR)
        older = finished_job(task, JobStatus.SUCCEEDED, 30 * dt.timedelta(minutes=1), scheduled_minutes_ago=500)
        client = tenant_client("tenant-a")

        with pytest.raises(SimulatedCrash):
            Archiver(store=store).archive_once()

        assert Job.objects.filter(id=job.id).exists() and store.get("tenant-a", job.id) is not None
        one = client.get(f"/v1/jobs/{job.id}")
        assert one.status_code == 200 and one.json()["archived"] is False  # MySQL's copy wins
        history = client.get(f"/v1/tasks/{task.id}/history?limit=1")
        page2 = client.get(f"/v1/tasks/{task.id}/history?limit=1&cursor={history.json()['next_cursor']}")
        ids = [j["id"] for j in history.json()["results"] + page2.json()["results"]]
        assert ids == [str(job.id), str(older.id)]
        assert page2.json()["next_cursor"] is None

        store.crash = False
        run = Archiver(store=store).archive_once()

        assert (run.read, run.deleted) == (1, 1)
        assert not Job.objects.filter(id=job.id).exists()
        assert len(store.all()) == 1 and store.writes == 2  # written twice, stored once
        again = client.get(f"/v1/jobs/{job.id}")
        assert again.status_code == 200 and again.json()["archived"] is True
        history = client.get(f"/v1/tasks/{task.id}/history")
        assert [j["id"] for j in history.json()["results"]] == [str(job.id), str(older.id)]
    finally:
        set_history_store(None)


def test_the_archiver_purges_expired_history(store):
    sql_store = SqlHistoryStore()
    expired, live = make_record(), make_record()
    sql_store.write_many([expired, live])
    HistoryEntry.objects.filter(job_id=expired.id).update(expires_at=timezone.now() - HOUR)

    run = Archiver(store=sql_store).archive_once()

    assert run.purged == 1
    assert [e.job_id for e in HistoryEntry.objects.all()] == [live.id]


class RetryDuringHistoryWrite(InMemoryHistoryStore):
    """Support staff retry the dead job, on their own connection, while the archiver writes its history."""

    def __init__(self):
        super().__init__()
        self.outcomes = []

    def write_many(self, records):
        super().write_many(records)
        records = list(records)

        def retry():
            try:
                for record in records:
                    self.outcomes.append(job_retry(job_id=record.id, tenant_id=None))
            finally:
                connections.close_all()

        thread = threading.Thread(target=retry)
        thread.start()
        thread.join()


@pytest.mark.django_db(transaction=True)
def test_a_manual_retry_racing_the_archiver_keeps_the_job_in_the_queue():
    task = make_task(max_attempts=3)
    job = finished_job(task, JobStatus.DEAD, 15 * DAY)
    store = RetryDuringHistoryWrite()

    run = Archiver(store=store).archive_once()

    assert store.outcomes == [RetryOutcome.REQUEUED]
    assert (run.read, run.deleted, run.kept) == (1, 0, 1)
    job.refresh_from_db()
    assert (job.status, job.attempt, job.max_attempts) == (JobStatus.PENDING, 3, 6)
    assert store.get("tenant-a", job.id).status == "dead"  # a stale copy; MySQL's pending job wins on reads


def run_archiver_once(history_backend: str) -> subprocess.CompletedProcess:
    """`manage.py run_archiver --once` as a real process, on the test database."""
    return run_manage("run_archiver", "--once", env=child_env(HISTORY_BACKEND=history_backend), timeout=60)


@pytest.mark.django_db(transaction=True)
def test_run_archiver_once_moves_jobs_to_the_sql_history_table_as_a_real_command():
    task = make_task()
    job = finished_job(task, JobStatus.SUCCEEDED, 2 * HOUR)
    young = finished_job(task, JobStatus.SUCCEEDED, dt.timedelta(minutes=5))

    done = run_archiver_once("sql")

    assert done.returncode == 0, done.stderr
    assert "event=archive" in done.stderr + done.stdout
    assert [e.job_id for e in HistoryEntry.objects.all()] == [job.id]
    assert list(Job.objects.values_list("id", flat=True)) == [young.id]


@pytest.mark.django_db(transaction=True)
def test_run_archiver_once_exits_non_zero_and_deletes_nothing_when_the_history_store_is_down():
    job = finished_job(make_task(), JobStatus.SUCCEEDED, 2 * HOUR)

    done = run_archiver_once("tests.history.failing_store.UnavailableHistoryStore")

    assert done.returncode != 0
    assert "HistoryUnavailable" in done.stderr
    assert Job.objects.filter(id=job.id).exists()


def _run_request(key: str, age: dt.timedelta) -> RunRequest:
    request = RunRequest.objects.create(
        task_id=uuid.uuid4(), tenant_id="tenant-a", idempotency_key=key, job_id=uuid.uuid4()
    )
    RunRequest.objects.filter(pk=request.pk).update(created_at=timezone.now() - age)
    return request


def test_the_archiver_purges_expired_run_now_keys_in_bounded_batches(store, settings):
    settings.RUN_REQUEST_RETENTION_SECONDS = 24 * 3600
    expired = [_run_request(f"old-{i}", DAY + HOUR * (i + 1)) for i in range(5)]
    live = _run_request("fresh", DAY - HOUR)
    archiver = Archiver(store=store, purge_limit=2)

    runs = [archiver.archive_once() for _ in range(4)]

    assert [run.run_requests_purged for run in runs] == [2, 2, 1, 0]
    assert [run.full for run in runs] == [True, True, False, False]  # a full purge asks for another step
    assert list(RunRequest.objects.values_list("pk", flat=True)) == [live.pk]
    assert not RunRequest.objects.filter(pk__in=[r.pk for r in expired]).exists()


def test_a_history_outage_does_not_stop_the_purge_of_run_now_keys(store, settings):
    settings.RUN_REQUEST_RETENTION_SECONDS = 3600
    _run_request("old", 2 * HOUR)
    finished_job(make_task(), JobStatus.SUCCEEDED, 2 * HOUR)
    store.fail_with = HistoryUnavailable("cluster down")

    assert Archiver(store=store).step() is False

    assert not RunRequest.objects.exists() and Job.objects.count() == 1
