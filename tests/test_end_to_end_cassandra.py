"""The whole product on the real Cassandra node (HISTORY_BACKEND=cassandra), and its faults.

The API runs in the test process, the four loops as real processes, a real
endpoint on 127.0.0.1, the history in the throwaway test keyspace. Then the two
faults a real node can give: the archiver killed between its Cassandra write and
its MySQL delete, and the node itself stopped (really stopped, then started
again, so the tests after these still find it running).
"""

from __future__ import annotations

import re
import signal
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cassandra.query import SimpleStatement

from history.base import HistoryUnavailable
from history.cassandra_store import CassandraHistoryStore, bucket_of
from history.stores import set_history_store
from jobs.models import Job, JobStatus
from tests.cassandra_node import REQUIRED, TEST_KEYSPACE, hosts, needs_cassandra, node_is_ours, start_node, stop_node
from tests.end_to_end import every_loop, iso, one_shot
from tests.factories import finished_job, make_task
from tests.processes import child_env, run_manage, start_manage, wait_until
from tests.receivers import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.cassandra, needs_cassandra]

TENANT = "tenant-e2e-cass"
TTL = 3600  # the test keyspace's tables (tests/conftest.py cassandra_session)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cassandra_history(settings, cassandra_session):
    """This process's history store is the Cassandra one, in the test keyspace; returns the children's env."""
    settings.HISTORY_BACKEND = "cassandra"
    settings.CASSANDRA_HOSTS = hosts()
    settings.CASSANDRA_KEYSPACE = TEST_KEYSPACE
    settings.HISTORY_TTL_SECONDS = TTL
    yield {
        "HISTORY_BACKEND": "cassandra",
        "CASSANDRA_HOSTS": ",".join(hosts()),
        "CASSANDRA_KEYSPACE": TEST_KEYSPACE,
        "HISTORY_TTL_SECONDS": str(TTL),
    }
    set_history_store(None)


def _row(session, job):
    """job_history's row of an archived job, with the TTL of a set column."""
    key = (job["tenant_id"], job["task_id"], job["scheduled_at"])
    return session.execute(
        "SELECT status, attempt, TTL(status) AS ttl, WRITETIME(error) AS error_written FROM job_history "
        "WHERE tenant_id = %s AND task_id = %s AND bucket = %s AND scheduled_at = %s AND job_id = %s",
        (key[0], key[1], bucket_of(key[2]), key[2], job["id"]),
    ).one()


def _tombstones_in_partition(session, tenant_id, task_id, scheduled_at) -> int:
    select = SimpleStatement("SELECT * FROM job_history WHERE tenant_id = %s AND task_id = %s AND bucket = %s")
    trace = session.execute(select, (tenant_id, task_id, bucket_of(scheduled_at)), trace=True).get_query_trace(
        max_wait_sec=10
    )
    found = [re.search(r"and (\d+) tombstone cells", e.description) for e in trace.events]
    counts = [int(m.group(1)) for m in found if m]
    assert counts, [e.description for e in trace.events]
    return sum(counts)


def _job_identity(job_id: str) -> dict:
    job = Job.objects.get(id=job_id)
    return {"id": job.id, "tenant_id": job.tenant_id, "task_id": job.task_id, "scheduled_at": job.scheduled_at}


def test_jobs_flow_through_every_loop_into_cassandra_and_read_back_merged_with_mysql(
    tenant_client, settings, tmp_path, cassandra_history, cassandra_session
):
    with Receiver() as receiver:
        allow = f"127.0.0.1:{receiver.port}"
        settings.EGRESS_ALLOWLIST = allow
        client = tenant_client(TENANT)
        run_at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
        ok = one_shot(client, "ok", receiver.url("/hello"), run_at)
        failing = one_shot(
            client, "failing", receiver.url("/status/500"), run_at, max_attempts=2, backoff_base_seconds=1
        )

        env = child_env(
            EGRESS_ALLOWLIST=allow,
            ARCHIVE_SUCCEEDED_AFTER_SECONDS="1",
            ARCHIVE_DEAD_AFTER_SECONDS="8",  # long enough for the DLQ retry below, short for the test
            **cassandra_history,
        )
        with every_loop(env, tmp_path):
            # The success: fired, then moved to Cassandra and gone from MySQL.
            wait_until(lambda: receiver.received("/hello"), timeout=60, what="the call to /hello")
            ok_job_id = receiver.received("/hello")[0].headers["Idempotency-Key"]
            ok_job = _job_identity(ok_job_id)
            wait_until(lambda: not Job.objects.filter(id=ok_job_id).exists(), timeout=60, what="archiving")
            archived = client.get(f"/v1/jobs/{ok_job_id}").json()
            assert (archived["status"], archived["archived"], archived["http_status"]) == ("succeeded", True, 200)
            row = _row(cassandra_session, ok_job)
            assert (row.status, row.attempt) == ("succeeded", 1)
            assert TTL - 120 < row.ttl <= TTL  # the row expires by itself
            assert row.error_written is None  # a success has no error: the cell was left unset
            assert _tombstones_in_partition(cassandra_session, TENANT, ok_job["task_id"], ok_job["scheduled_at"]) == 0

            # The same task runs again (new run_at): its history merges MySQL's job with Cassandra's.
            again_at = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
            patched = client.patch(
                f"/v1/tasks/{ok['id']}",
                {"schedule": {"run_at": iso(again_at)}, "http": {"url": receiver.url("/slow/30"), "method": "POST"}},
                format="json",
                HTTP_IF_MATCH=f'"{ok["version"]}"',
            )
            assert patched.status_code == 200, patched.json()
            wait_until(lambda: receiver.received("/slow/30"), timeout=60, what="the second run of the task")
            second_id = receiver.received("/slow/30")[0].headers["Idempotency-Key"]
            history = client.get(f"/v1/tasks/{ok['id']}/history?limit=1").json()
            assert [(j["id"], j["archived"], j["status"]) for j in history["results"]] == [
                (second_id, False, "running")
            ]
            older = client.get(f"/v1/tasks/{ok['id']}/history?limit=1&cursor={history['next_cursor']}").json()
            assert [(j["id"], j["archived"]) for j in older["results"]] == [(ok_job_id, True)]
            assert older["next_cursor"] is None

            # The failure: dead in the DLQ, retried by hand (same id), dead again, then archived.
            wait_until(
                lambda: Job.objects.filter(task_id=failing["id"], status=JobStatus.DEAD).exists(),
                timeout=60,
                what="the failing job to die",
            )
            (dead,) = client.get("/v1/dlq").json()["results"]
            dead_job = _job_identity(dead["id"])
            assert client.post(f"/v1/jobs/{dead['id']}/retry").status_code == 202
            wait_until(
                lambda: Job.objects.filter(id=dead["id"], status=JobStatus.DEAD, attempt=4).exists(),
                timeout=60,
                what="the retried job to die again",
            )
            wait_until(lambda: not Job.objects.filter(id=dead["id"]).exists(), timeout=60, what="archiving the dead")
            archived_dead = client.get(f"/v1/jobs/{dead['id']}").json()
            assert (archived_dead["status"], archived_dead["attempt"], archived_dead["archived"]) == ("dead", 4, True)
            assert archived_dead["http_status"] == 500
            row = _row(cassandra_session, dead_job)
            assert (row.status, row.attempt) == ("dead", 4)
            assert TTL - 120 < row.ttl <= TTL
            assert row.error_written is not None  # a dead job's error was written
            assert [j["id"] for j in client.get(f"/v1/tasks/{failing['id']}/history").json()["results"]] == [dead["id"]]
            assert client.post(f"/v1/jobs/{dead['id']}/retry").status_code == 404  # archived: no longer retryable


def _run_archiver_once(history_backend: str, extra_env: dict) -> subprocess.CompletedProcess:
    return run_manage("run_archiver", "--once", env=child_env(**{**extra_env, "HISTORY_BACKEND": history_backend}))


def test_an_archiver_killed_between_the_cassandra_write_and_the_mysql_delete_loses_and_duplicates_nothing(
    cassandra_history, cassandra_session
):
    task = make_task(tenant_id=TENANT)
    jobs = [
        finished_job(task, JobStatus.SUCCEEDED, timedelta(hours=2), scheduled_minutes_ago=200 + i) for i in range(3)
    ]
    jobs.append(finished_job(task, JobStatus.DEAD, timedelta(days=15)))

    killed = _run_archiver_once("tests.history.crashing_store.KillAfterHistoryWrite", cassandra_history)

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    store = CassandraHistoryStore(session=cassandra_session, ttl_seconds=TTL)
    in_history = {job.id for job in jobs if store.get(TENANT, job.id) is not None}
    assert in_history, "the kill came before any history write"
    assert set(Job.objects.values_list("id", flat=True)) == {job.id for job in jobs}  # nothing deleted

    finished = _run_archiver_once("cassandra", cassandra_history)

    assert finished.returncode == 0, finished.stderr
    assert not Job.objects.exists()
    page = store.page(TENANT, task.id, None, 100)
    assert sorted(r.id for r in page) == sorted(job.id for job in jobs)  # one row per job
    buckets = {bucket_of(job.scheduled_at) for job in jobs}
    rows = sum(
        cassandra_session.execute(
            "SELECT COUNT(*) FROM job_history WHERE tenant_id = %s AND task_id = %s AND bucket = %s",
            (TENANT, task.id, bucket),
        ).one()[0]
        for bucket in buckets
    )
    assert rows == len(jobs)  # the rewrite was an upsert: still one row per job


def test_with_the_node_stopped_reads_are_503_the_archiver_keeps_every_job_and_catches_up_after(
    tenant_client, tmp_path, cassandra_history, cassandra_session
):
    if not node_is_ours():
        # CI starts the node with the script, so there this can only fail, never skip.
        (pytest.fail if REQUIRED else pytest.skip)(
            "the Cassandra node was not started by scripts/cassandra.sh, so this test may not stop it"
        )
    client = tenant_client(TENANT)
    task = make_task(tenant_id=TENANT)
    store = CassandraHistoryStore(session=cassandra_session, ttl_seconds=TTL)
    already = finished_job(task, JobStatus.SUCCEEDED, timedelta(hours=3), scheduled_minutes_ago=400)
    assert _run_archiver_once("cassandra", cassandra_history).returncode == 0  # only Cassandra holds it now
    waiting = [
        finished_job(task, JobStatus.SUCCEEDED, timedelta(hours=2), scheduled_minutes_ago=300 + i) for i in range(3)
    ]
    waiting.append(finished_job(task, JobStatus.DEAD, timedelta(days=15)))

    stop_node()
    try:
        archiver = start_manage(
            "run_archiver",
            "--idle-seconds",
            "0.5",
            "--max-backoff-seconds",
            "2",
            env=child_env(**cassandra_history),
            log_path=tmp_path / "archiver.log",
        )
        try:
            wait_until(
                lambda: (tmp_path / "archiver.log").read_text().count("history store") >= 2,
                timeout=60,
                what="the archiver to fail twice",
            )
            assert set(Job.objects.values_list("id", flat=True)) == {job.id for job in waiting}

            history = client.get(f"/v1/tasks/{task.id}/history")
            assert history.status_code == 503
            assert history["Content-Type"].startswith("application/problem+json")
            assert history.json()["status"] == 503 and "results" not in history.json()
            one = client.get(f"/v1/jobs/{already.id}")  # only Cassandra holds it
            assert one.status_code == 503 and one["Content-Type"].startswith("application/problem+json")
            with pytest.raises(HistoryUnavailable):
                store.get(TENANT, already.id)
        finally:
            start_node()

        wait_until(lambda: not Job.objects.exists(), timeout=120, what="the archiver to catch up")
        archiver.send_signal(signal.SIGTERM)
        assert archiver.wait(timeout=30) == 0
    finally:
        start_node()  # idempotent; the tests after this one need the node
        wait_until(_answers(cassandra_session), timeout=60, what="the test session to reconnect")

    log = (tmp_path / "archiver.log").read_text()
    assert "dependency unavailable, retrying" in log and "event=unavailable" in log, log
    # The driver logs each refused connection with its traceback; none may come from our code.
    assert not re.search(r'File ".*/(workers|history|jobs)/', log), log
    history = client.get(f"/v1/tasks/{task.id}/history")
    assert history.status_code == 200
    ids = [job["id"] for job in history.json()["results"]]
    assert sorted(ids) == sorted(str(job.id) for job in [already, *waiting])  # every job, once
    assert all(job["archived"] for job in history.json()["results"])


def _answers(session):
    def check() -> bool:
        try:
            session.execute("SELECT release_version FROM system.local")
        except Exception:
            return False
        return True

    return check
