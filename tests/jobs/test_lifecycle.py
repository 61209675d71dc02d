"""Pause and delete take the task's pending jobs out of the queue; a running job's result still lands."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from history.memory import InMemoryHistoryStore
from jobs.models import Job, JobStatus
from jobs.queue import JobResult, Outcome, claim_due, record_results
from jobs.services import RetryOutcome, job_retry
from tasks import services
from tests.factories import make_job, make_task
from workers.archiver import Archiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(owner):
    return owner


MINUTE = dt.timedelta(minutes=1)


def _jobs_of(task):
    """pending (due), pending (a retry after attempt 2), running, dead: one of each."""
    start = timezone.now() - 10 * MINUTE
    return {
        "due": make_job(task, scheduled_at=start),
        "retry": make_job(task, scheduled_at=start + MINUTE, attempt=2, next_attempt_at=timezone.now() + MINUTE),
        "running": make_job(task, scheduled_at=start + 2 * MINUTE, status=JobStatus.RUNNING, attempt=1, worker_id="w1"),
        "dead": make_job(
            task,
            scheduled_at=start + 3 * MINUTE,
            status=JobStatus.DEAD,
            attempt=5,
            error="HTTP 500",
            finished_at=timezone.now(),
        ),
    }


def _statuses(jobs):
    return {name: Job.objects.get(pk=job.pk).status for name, job in jobs.items()}


def test_pause_cancels_pending_jobs_and_retries_but_not_running_or_dead_ones(client):
    task = make_task()
    jobs = _jobs_of(task)
    assert client.post(f"/v1/tasks/{task.pk}/pause").status_code == 200
    assert _statuses(jobs) == {"due": "cancelled", "retry": "cancelled", "running": "running", "dead": "dead"}
    cancelled = Job.objects.get(pk=jobs["due"].pk)
    assert cancelled.error == "cancelled: task paused" and cancelled.finished_at is not None
    # Nothing of a paused task can be claimed.
    assert claim_due(worker_id="w2", limit=10, lookahead_seconds=120) == []
    # Resume does not bring cancelled jobs back.
    assert client.post(f"/v1/tasks/{task.pk}/resume").status_code == 200
    assert _statuses(jobs)["due"] == "cancelled"


def test_a_dead_job_of_a_paused_task_is_not_retried_409_task_paused(client):
    task = make_task()
    dead = _jobs_of(task)["dead"]
    client.post(f"/v1/tasks/{task.pk}/pause")
    response = client.post(f"/v1/jobs/{dead.pk}/retry")
    assert response.status_code == 409
    assert response.json()["type"].endswith("/task-paused")
    assert Job.objects.get(pk=dead.pk).status == JobStatus.DEAD
    client.post(f"/v1/tasks/{task.pk}/resume")
    assert client.post(f"/v1/jobs/{dead.pk}/retry").status_code == 202


def test_delete_cancels_pending_and_dead_jobs_so_the_dlq_forgets_them_and_retry_is_409(client):
    task = make_task()
    jobs = _jobs_of(task)
    assert client.get("/v1/dlq").json()["results"][0]["id"] == str(jobs["dead"].pk)
    assert client.delete(f"/v1/tasks/{task.pk}").status_code == 204
    assert _statuses(jobs) == {"due": "cancelled", "retry": "cancelled", "running": "running", "dead": "cancelled"}
    assert Job.objects.get(pk=jobs["dead"].pk).error == "HTTP 500"  # the last failure is kept
    assert client.get("/v1/dlq").json()["results"] == []
    # The job was cancelled with its task; the 409 names the reason that holds for good.
    for name in ("dead", "due"):
        response = client.post(f"/v1/jobs/{jobs[name].pk}/retry")
        assert response.status_code == 409
        assert response.json()["type"].endswith("/task-deleted")
        assert "deleted" in response.json()["detail"]
    assert client.get(f"/v1/jobs/{jobs['due'].pk}").json()["status"] == "cancelled"
    assert job_retry(job_id=jobs["dead"].pk, tenant_id=None) is RetryOutcome.TASK_DELETED


def test_retrying_a_job_cancelled_while_its_task_lives_is_a_409_job_cancelled(client):
    task = make_task()
    jobs = _jobs_of(task)
    assert client.post(f"/v1/jobs/{jobs['due'].pk}/cancel").status_code == 202
    client.post(f"/v1/tasks/{task.pk}/pause")
    for name in ("due", "retry"):  # cancelled by the tenant, then with the pause
        response = client.post(f"/v1/jobs/{jobs[name].pk}/retry")
        assert response.status_code == 409
        assert response.json()["type"].endswith("/job-cancelled")
    # Resuming does not make a cancelled job retryable.
    client.post(f"/v1/tasks/{task.pk}/resume")
    assert client.post(f"/v1/jobs/{jobs['retry'].pk}/retry").json()["type"].endswith("/job-cancelled")


def test_a_running_jobs_late_result_still_lands_after_delete_and_its_retry_is_cancelled(client):
    task = make_task()
    jobs = _jobs_of(task)
    client.delete(f"/v1/tasks/{task.pk}")
    running = jobs["running"]
    report = record_results(
        worker_id="w1",
        results=[JobResult(running.pk, 1, 1, Outcome.RETRY, http_status=500, error="HTTP 500", delay_seconds=10)],
    )
    assert report.written and not report.dropped  # the fence held: same worker, same attempt
    row = Job.objects.get(pk=running.pk)
    # The retry it asked for would fire for a deleted task: the result write cancels it instead.
    assert (row.status, row.http_status, row.error) == ("cancelled", 500, "HTTP 500")


def test_a_running_jobs_success_lands_after_pause(client):
    task = make_task()
    running = _jobs_of(task)["running"]
    client.post(f"/v1/tasks/{task.pk}/pause")
    record_results(worker_id="w1", results=[JobResult(running.pk, 1, 1, Outcome.SUCCEEDED, http_status=200)])
    assert Job.objects.get(pk=running.pk).status == JobStatus.SUCCEEDED


def test_support_staff_retry_of_a_paused_tasks_dead_job_is_refused_too():
    task = make_task()
    dead = _jobs_of(task)["dead"]
    services.task_pause(tenant_id=task.tenant_id, task_id=task.pk, actor="token:t")
    assert job_retry(job_id=dead.pk, tenant_id=None) is RetryOutcome.TASK_PAUSED


def test_pausing_another_tenants_task_cancels_nothing(tenant_client):
    task = make_task()
    jobs = _jobs_of(task)
    assert tenant_client("tenant-b").post(f"/v1/tasks/{task.pk}/pause").status_code == 404
    assert _statuses(jobs)["due"] == "pending"


def test_the_archiver_moves_cancelled_jobs_to_the_history():
    task = make_task()
    jobs = _jobs_of(task)
    services.task_delete(tenant_id=task.tenant_id, task_id=task.pk, actor="token:t")
    Job.objects.filter(status=JobStatus.CANCELLED).update(finished_at=timezone.now() - dt.timedelta(hours=2))
    store = InMemoryHistoryStore()
    Archiver(store=store).archive_once()
    assert not Job.objects.filter(status=JobStatus.CANCELLED).exists()
    archived = store.get(task.tenant_id, jobs["dead"].pk)
    assert archived is not None and archived.status == "cancelled"


def test_a_paused_task_says_why_and_resume_clears_it(client):
    task = make_task()
    paused = client.post(f"/v1/tasks/{task.pk}/pause").json()
    assert (paused["status"], paused["paused_reason"]) == ("paused", "paused by the tenant")
    resumed = client.post(f"/v1/tasks/{task.pk}/resume").json()
    assert (resumed["status"], resumed["paused_reason"]) == ("active", None)


def test_an_expired_lease_of_a_paused_tasks_job_is_cancelled_not_requeued(client):
    from jobs.queue import sweep_expired_leases

    paused, deleted, active = make_task(), make_task(), make_task()
    expired = timezone.now() - dt.timedelta(minutes=5)
    jobs = {
        name: make_job(task, status=JobStatus.RUNNING, attempt=1, worker_id="w", lease_expires_at=expired)
        for name, task in (("paused", paused), ("deleted", deleted), ("active", active))
    }
    spent = make_job(deleted, scheduled_at=expired, status=JobStatus.RUNNING, attempt=5, max_attempts=5,
                     worker_id="w", lease_expires_at=expired)  # fmt: skip
    client.post(f"/v1/tasks/{paused.pk}/pause")
    client.delete(f"/v1/tasks/{deleted.pk}")
    sweep_expired_leases(limit=100)
    assert _statuses({**jobs, "spent": spent}) == {
        "paused": "cancelled", "deleted": "cancelled", "active": "pending", "spent": "cancelled",
    }  # fmt: skip
    assert Job.objects.get(pk=jobs["paused"].pk).finished_at is not None


def test_a_dead_job_whose_task_is_deleted_is_a_409_task_deleted(client):
    from tasks.models import Task

    task = make_task()
    dead = _jobs_of(task)["dead"]
    Task.objects.filter(pk=task.pk).update(status="deleted")  # deleted without the service: the job stayed dead
    response = client.post(f"/v1/jobs/{dead.pk}/retry")
    assert response.status_code == 409 and response.json()["type"].endswith("/task-deleted")
    assert job_retry(job_id=dead.pk, tenant_id=None) is RetryOutcome.TASK_DELETED


def test_a_tenant_cancels_a_pending_job_but_not_a_running_or_dead_one(client, other_tenant):
    task = make_task()
    jobs = _jobs_of(task)
    assert other_tenant.post(f"/v1/jobs/{jobs['due'].pk}/cancel").status_code == 404
    response = client.post(f"/v1/jobs/{jobs['due'].pk}/cancel")
    assert response.status_code == 202 and response.json()["status"] == "cancelled"
    assert response.json()["error"] == "cancelled by the tenant"
    # running: its claim stands; dead: stays in the DLQ (support discards); cancelled: nothing left to cancel.
    for name in ("running", "dead", "due"):
        refused = client.post(f"/v1/jobs/{jobs[name].pk}/cancel")
        assert refused.status_code == 409 and refused.json()["type"].endswith("/job-not-pending")
    assert [row["id"] for row in client.get("/v1/dlq").json()["results"]] == [str(jobs["dead"].pk)]
    assert client.post("/v1/jobs/not-an-id/cancel").status_code == 404
    # The cancelled job is never claimed; the task's other pending job still is.
    assert [job.id for job in claim_due(worker_id="w2", limit=10, lookahead_seconds=120)] == [jobs["retry"].pk]


def test_a_cancelled_job_archived_to_the_sql_history_reads_back_cancelled(client):
    from history.sql_store import SqlHistoryStore
    from history.stores import set_history_store

    task = make_task()
    job = _jobs_of(task)["due"]
    client.post(f"/v1/tasks/{task.pk}/pause")
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - dt.timedelta(hours=2))
    store = SqlHistoryStore()
    set_history_store(store)
    try:
        Archiver(store=store).archive_once()
        assert not Job.objects.filter(pk=job.pk).exists()
        shown = client.get(f"/v1/jobs/{job.pk}").json()
        assert (shown["status"], shown["archived"], shown["error"]) == ("cancelled", True, "cancelled: task paused")
    finally:
        set_history_store(None)


def test_the_consoles_bulk_retry_leaves_a_paused_tasks_dead_jobs_dead(client):
    from jobs.services import jobs_retry_paced

    paused, active = make_task(), make_task()
    stuck, retried = _jobs_of(paused)["dead"], _jobs_of(active)["dead"]
    client.post(f"/v1/tasks/{paused.pk}/pause")
    outcomes = jobs_retry_paced(job_ids=[stuck.pk, retried.pk], per_second=0)
    assert outcomes == {stuck.pk: RetryOutcome.TASK_PAUSED, retried.pk: RetryOutcome.REQUEUED}
    assert Job.objects.get(pk=stuck.pk).status == JobStatus.DEAD


@pytest.mark.parametrize("stop", ["pause", "delete"])
def test_the_task_and_its_jobs_change_in_one_transaction_or_not_at_all(stop):
    from tasks.models import Task
    from tasks.signals import task_stopped

    task = make_task()
    jobs = _jobs_of(task)

    def cancel_then_fail(**kwargs):
        assert _statuses(jobs)["due"] == "cancelled"  # the jobs app's receiver ran, in this transaction
        raise RuntimeError("what follows the cancel failed")

    # Runs after the jobs app's own receiver (connected first), inside the same transaction.
    task_stopped.connect(cancel_then_fail, dispatch_uid="test-fails")
    try:
        with pytest.raises(RuntimeError):
            call = services.task_pause if stop == "pause" else services.task_delete
            call(tenant_id=task.tenant_id, task_id=task.pk, actor="token:t")
    finally:
        task_stopped.disconnect(dispatch_uid="test-fails")
    assert Task.objects.get(pk=task.pk).status == "active"
    assert _statuses(jobs) == {"due": "pending", "retry": "pending", "running": "running", "dead": "dead"}
