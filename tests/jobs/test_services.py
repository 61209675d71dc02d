"""job_retry: one guarded UPDATE that requeues a dead job, and says why it did not."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from domain.ids import new_id
from jobs.models import Job, JobStatus
from jobs.services import RetryOutcome, job_retry
from tests.concurrency import at_once
from tests.factories import make_job, make_task

pytestmark = pytest.mark.django_db


def _dead_job(task, **overrides):
    finished = timezone.now() - timedelta(hours=2)
    fields = {
        "status": JobStatus.DEAD,
        "attempt": 3,
        "max_attempts": 3,
        "error": "HTTP 500",
        "http_status": 500,
        "response_body": "boom",
        "worker_id": "w-1",
        "lease_expires_at": finished,
        "started_at": finished,
        "finished_at": finished,
    }
    fields.update(overrides)
    return make_job(task, **fields)


def test_retrying_a_dead_job_requeues_the_same_job_with_a_fresh_budget():
    task = make_task(max_attempts=4)
    job = _dead_job(task)
    before = timezone.now()

    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.REQUEUED

    job.refresh_from_db()
    assert job.status == JobStatus.PENDING
    assert job.attempt == 3  # the fencing token only grows
    assert job.max_attempts == 3 + 4
    assert job.scheduled_at == task.next_run_at
    assert job.next_attempt_at >= before - timedelta(seconds=1)
    assert job.next_attempt_at <= timezone.now() + timedelta(seconds=1)
    assert (job.error, job.http_status, job.response_body) == (None, None, None)
    assert (job.worker_id, job.lease_expires_at, job.started_at, job.finished_at) == (None, None, None, None)


def test_retrying_a_job_that_is_not_dead_is_refused_and_changes_nothing():
    task = make_task()
    job = make_job(task, status=JobStatus.SUCCEEDED, attempt=1, finished_at=timezone.now())

    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.NOT_DEAD

    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert job.attempt == 1


def test_retrying_a_job_that_does_not_exist_says_gone():
    assert job_retry(job_id=new_id(), tenant_id="tenant-a") is RetryOutcome.GONE


def test_another_tenants_dead_job_is_gone_and_stays_dead():
    job = _dead_job(make_task(tenant_id="tenant-b"))

    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.GONE
    job.refresh_from_db()
    assert job.status == JobStatus.DEAD


def test_another_tenants_job_that_is_not_dead_is_also_gone_not_a_conflict():
    job = make_job(make_task(tenant_id="tenant-b"))

    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.GONE


def test_support_staff_retry_any_tenants_dead_job():
    job = _dead_job(make_task(tenant_id="tenant-b"))

    assert job_retry(job_id=job.id, tenant_id=None) is RetryOutcome.REQUEUED
    job.refresh_from_db()
    assert job.status == JobStatus.PENDING


def test_a_second_retry_of_the_same_job_is_a_conflict():
    job = _dead_job(make_task())

    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.REQUEUED
    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.NOT_DEAD


def test_a_dead_job_of_a_vanished_task_gets_one_more_attempt():
    task = make_task()
    job = _dead_job(task)
    task.delete()  # a hard delete never happens in the product; the retry must not fail on it

    assert job_retry(job_id=job.id, tenant_id="tenant-a") is RetryOutcome.REQUEUED
    job.refresh_from_db()
    assert job.max_attempts == job.attempt + 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_of_one_dead_job_requeue_it_exactly_once():
    job = _dead_job(make_task())
    outcomes = at_once(lambda: job_retry(job_id=job.id, tenant_id="tenant-a"), [()] * 4)

    assert sorted(o.value for o in outcomes) == ["not_dead", "not_dead", "not_dead", "requeued"]
    assert Job.objects.get(id=job.id).status == JobStatus.PENDING
    assert connection.vendor == "mysql"
