"""A paused tenant on real MariaDB: no new jobs, neither claim takes its jobs, and resume catches up."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import MySQLdb
import pytest
from django.db import connection

from bench.round1_claim import claim_priority_first
from jobs.fairness import TenantCursor
from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome, record_results
from jobs.queue.claims import claim_fair_share
from tasks.models import TenantLimits
from tasks.pausing import tenant_pause, tenant_resume
from tests.factories import db_now, make_task
from tests.workers.executor_db import bulk_jobs
from workers.scheduler import Scheduler

pytestmark = pytest.mark.django_db(transaction=True)

MINUTE = timedelta(minutes=1)


def pause(tenant_id: str) -> None:
    assert tenant_pause(tenant_id=tenant_id, paused_by="agent", reason="incident 42")


def jobs_of(task) -> list:
    return list(Job.objects.filter(task_id=task.pk).order_by("scheduled_at").values_list("scheduled_at", flat=True))


def catch_up(scheduler: Scheduler) -> None:
    for _ in range(100):
        if not scheduler.tick().more_work:
            return
    raise AssertionError("the scheduler never caught up")


# --- the scheduler ---------------------------------------------------------------


def test_the_scheduler_passes_over_a_paused_tenants_due_tasks_and_schedules_the_others():
    due = db_now().replace(second=0, microsecond=0) - MINUTE
    paused_task = make_task(tenant_id="acme", next_run_at=due)
    other = make_task(tenant_id="globex", next_run_at=due)
    pause("acme")

    result = Scheduler(lookahead_seconds=0).tick()

    assert result.selected == 1
    assert jobs_of(paused_task) == [] and jobs_of(other) == [due]
    paused_task.refresh_from_db()
    assert paused_task.next_run_at == due  # kept: the missed runs are the policy's on resume


def test_after_resume_the_scheduler_catches_up_by_each_tasks_missed_runs_policy():
    start = db_now().replace(second=0, microsecond=0) - 5 * MINUTE
    replay = make_task(tenant_id="acme", next_run_at=start, missed_runs="all")
    latest = make_task(tenant_id="acme", next_run_at=start, missed_runs="latest")
    pause("acme")
    catch_up(Scheduler(lookahead_seconds=0))
    assert jobs_of(replay) == jobs_of(latest) == []

    assert tenant_resume(tenant_id="acme")
    catch_up(Scheduler(lookahead_seconds=0, missed_runs_max=100))

    last_missed = db_now().replace(second=0, microsecond=0)
    replayed = jobs_of(replay)
    assert replayed[0] == start and replayed[-1] >= last_missed - MINUTE and len(replayed) >= 5
    assert jobs_of(latest) == [replayed[-1]]


def test_a_tenant_whose_row_has_limits_but_no_pause_is_scheduled():
    due = db_now().replace(second=0, microsecond=0) - MINUTE
    task = make_task(tenant_id="acme", next_run_at=due)
    TenantLimits.objects.create(tenant_id="acme", max_running_jobs=3)
    assert Scheduler(lookahead_seconds=0).tick().selected == 1
    assert jobs_of(task) == [due]


# --- the claims ------------------------------------------------------------------


def due_jobs() -> tuple[set, set]:
    now = db_now() - timedelta(seconds=1)
    paused = set(bulk_jobs(4, tenant_id="acme", next_attempt_at=now - timedelta(seconds=30)))  # older: first in line
    others = set(bulk_jobs(3, tenant_id="globex", next_attempt_at=now))
    return paused, others


def fair(limit: int = 10):
    return claim_fair_share(worker_id="w-1", limit=limit, lookahead_seconds=1, cursor=TenantCursor())


def legacy(limit: int = 10):
    return claim_priority_first(worker_id="w-1", limit=limit, lookahead_seconds=1)


@pytest.mark.parametrize("claim", [fair, legacy], ids=["fair claim", "round-1 claim"])
def test_a_claim_takes_the_other_tenants_jobs_and_leaves_the_paused_tenants_pending(claim):
    paused, others = due_jobs()
    pause("acme")

    claimed = claim()

    assert {job.id for job in claimed} == others
    assert set(Job.objects.filter(status=JobStatus.PENDING).values_list("id", flat=True)) == paused
    assert claim() == []  # polled again: still nothing of the paused tenant


@pytest.mark.parametrize("claim", [fair, legacy], ids=["fair claim", "round-1 claim"])
def test_after_resume_the_paused_tenants_pending_jobs_are_claimed(claim):
    paused, _ = due_jobs()
    pause("acme")
    claim()
    assert tenant_resume(tenant_id="acme")
    assert {job.id for job in claim()} == paused


def test_a_paused_tenant_with_a_running_cap_gets_no_slot_either(settings):
    settings.TENANT_MAX_RUNNING_JOBS = 50  # every tenant capped: each one's row locked by the claim
    paused, others = due_jobs()
    TenantLimits.objects.create(tenant_id="acme", max_running_jobs=10)
    pause("acme")
    assert {job.id for job in fair()} == others
    tenant_resume(tenant_id="acme")
    assert {job.id for job in fair()} == paused


def test_a_job_already_running_when_the_tenant_is_paused_finishes():
    paused, _ = due_jobs()
    running = [job for job in fair() if job.id in paused]
    assert running
    pause("acme")
    results = [
        JobResult(job.id, job.fence, job.attempt, Outcome.SUCCEEDED, 200, None, "ok", None, 5) for job in running
    ]
    record_results(worker_id="w-1", results=results)
    assert set(Job.objects.filter(id__in=[job.id for job in running]).values_list("status", flat=True)) == {
        JobStatus.SUCCEEDED
    }


@contextlib.contextmanager
def limits_rows_locked_elsewhere(*tenant_ids: str):
    """Another transaction holds the tenants' limits rows X-locked (as a claim or a task create does)."""
    settings_dict = connection.settings_dict
    other = MySQLdb.connect(
        host=settings_dict["HOST"] or "127.0.0.1",
        port=int(settings_dict["PORT"] or 3306),
        user=settings_dict["USER"],
        password=settings_dict["PASSWORD"] or "",
        database=settings_dict["NAME"],
    )
    try:
        other.autocommit(False)
        with other.cursor() as cursor:
            marks = ", ".join(["%s"] * len(tenant_ids))
            cursor.execute(f"SELECT tenant_id FROM tenant_limits WHERE tenant_id IN ({marks}) FOR UPDATE", tenant_ids)
        yield
    finally:
        other.rollback()
        other.close()


def test_the_tick_and_the_round_1_claim_neither_wait_on_nor_skip_past_a_locked_limits_row():
    due = db_now().replace(second=0, microsecond=0) - MINUTE
    paused_task, other = make_task(tenant_id="acme", next_run_at=due), make_task(tenant_id="globex", next_run_at=due)
    paused, others = due_jobs()
    pause("acme")
    TenantLimits.objects.create(tenant_id="globex")
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")  # a wait would fail the test in 1 s
    # The subquery is a plain read: a locked row is read as committed, not waited on, and a
    # locked paused row is not skipped over (SKIP LOCKED does not reach into it).
    with limits_rows_locked_elsewhere("acme", "globex"):
        assert Scheduler(lookahead_seconds=0).tick().selected == 1
        claimed = {job.id for job in legacy()}
    assert claimed == others | set(Job.objects.filter(task_id=other.pk).values_list("id", flat=True))
    assert jobs_of(paused_task) == [] and jobs_of(other) == [due]
    assert set(Job.objects.filter(status=JobStatus.PENDING).values_list("id", flat=True)) == paused


# --- what the tenant sees ------------------------------------------------------------


@pytest.mark.usefixtures("fake_dns")
def test_a_paused_tenants_api_keeps_working_and_its_run_now_job_waits_until_the_resume(tenant_client):
    client = tenant_client("acme")
    pause("acme")
    body = {"name": "during the pause", "schedule": {"cron": "* * * * *"}, "http": {"url": "https://example.com/hook"}}

    created = client.post("/v1/tasks", body, format="json")
    assert created.status_code == 201, created.content
    task_id = created.json()["id"]
    edited = client.patch(f"/v1/tasks/{task_id}", {"name": "renamed"}, format="json", HTTP_IF_MATCH=created["ETag"])
    assert edited.status_code == 200 and edited.json()["name"] == "renamed"
    run = client.post(f"/v1/tasks/{task_id}/run")
    assert run.status_code == 202
    job_id = run.json()["id"]

    assert fair() == [] and legacy() == []
    assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "pending"
    tenant_resume(tenant_id="acme")
    assert [str(job.id) for job in fair()] == [job_id]
