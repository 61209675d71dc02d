"""Events written with the transition that causes them, as notification jobs, on real MariaDB.

The executor's result write and the reconciler's sweep emit job.dead, task.failing and
task.auto_paused in their own transaction; task.completed is a function the scheduler calls.
Each is deduplicated by its key, a notification job's own death emits nothing, and a tenant
without a subscription costs the result write no extra statement.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from domain import notification_events as events
from jobs.models import Job, JobStatus
from jobs.queue import record_results, sweep_expired_leases
from notifications import events as emitting
from notifications.models import NotificationEvent
from tasks.models import Task, TaskStatus
from tests.factories import make_task
from tests.notifications.support import WORKER, dead, notification_jobs, running_job, sent, subscribe, succeeded
from tests.tenants import OTHER_TENANT, OWNER

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_dead_job_of_a_subscribed_tenant_becomes_one_notification_job_with_the_snapshot():
    subscribe(OWNER, events=["job.dead"])
    task = make_task(auto_pause_after=0)
    job = running_job(task, attempt=3, max_attempts=3)
    with override_settings(NOTIFICATION_MAX_ATTEMPTS=4, NOTIFICATION_TIMEOUT_SECONDS=7):
        record_results(worker_id=WORKER, results=[dead(job, 503)])
    [notification] = notification_jobs(OWNER)
    assert (notification.status, notification.attempt, notification.max_attempts) == (JobStatus.PENDING, 0, 4)
    assert notification.timeout_seconds == 7
    assert (notification.request_method, notification.request_url) == ("POST", "https://example.com/notify")
    assert notification.request_headers == {"Content-Type": "application/json"}
    body = json.loads(notification.request_body)
    assert body["type"] == "job.dead" and body["id"] == str(notification.id)
    assert body["data"] == {
        "task_id": str(task.id),
        "job_id": str(job.id),
        "attempt": 3,
        "http_status": 503,
        "error": "HTTP 503",
    }
    assert body["created_at"].endswith("Z")
    event = NotificationEvent.objects.get()
    assert (event.id, event.tenant_id, event.event_type, event.task_id) == (notification.id, OWNER, "job.dead", task.id)
    # The notification is no task of the tenant: no task row, and the task's own health is untouched by it.
    assert not Task.objects.filter(id=notification.task_id).exists()


def test_failing_after_n_dead_jobs_in_a_row_and_the_auto_pause_each_notify_once():
    subscribe(OWNER, failing_after=2)
    task = make_task(auto_pause_after=3)
    first, second, third = (running_job(task, scheduled_at=datetime(2026, 1, 1, 0, n, tzinfo=UTC)) for n in range(3))
    record_results(worker_id=WORKER, results=[dead(first)])
    assert [kind for kind, _ in sent(OWNER)] == ["job.dead"]
    record_results(worker_id=WORKER, results=[dead(second), dead(third)])
    kinds = [kind for kind, _ in sent(OWNER)]
    assert sorted(kinds) == ["job.dead", "job.dead", "job.dead", "task.auto_paused", "task.failing"]
    data = dict(sent(OWNER)[1:])
    assert data["task.failing"] == {"task_id": str(task.id), "job_id": str(second.id), "consecutive_failures": 2}
    assert data["task.auto_paused"]["job_id"] == str(third.id)
    assert data["task.auto_paused"]["consecutive_failures"] == 3
    assert "paused automatically" in data["task.auto_paused"]["paused_reason"]
    assert Task.objects.get(id=task.id).status == TaskStatus.PAUSED


def test_a_success_between_resets_the_count_so_failing_is_sent_again_only_on_the_next_crossing():
    subscribe(OWNER, events=["task.failing"], failing_after=1)
    task = make_task(auto_pause_after=0)
    jobs = [running_job(task, scheduled_at=datetime(2026, 1, 1, 0, n, tzinfo=UTC)) for n in range(4)]
    record_results(worker_id=WORKER, results=[dead(jobs[0]), dead(jobs[1]), succeeded(jobs[2]), dead(jobs[3])])
    assert [data["job_id"] for _, data in sent(OWNER)] == [str(jobs[0].id), str(jobs[3].id)]


def test_only_the_subscribed_types_are_sent_and_a_disabled_subscription_sends_nothing():
    subscribe(OWNER, events=["task.auto_paused"])
    subscribe(OTHER_TENANT, enabled=False)
    mine = make_task(auto_pause_after=5)
    theirs = make_task(tenant_id=OTHER_TENANT)
    record_results(worker_id=WORKER, results=[dead(running_job(mine)), dead(running_job(theirs))])
    assert sent(OWNER) == [] and sent(OTHER_TENANT) == []
    assert not NotificationEvent.objects.exists()


def test_each_tenants_events_go_to_its_own_subscription_only():
    subscribe(OWNER, url="https://example.com/a", events=["job.dead"])
    subscribe(OTHER_TENANT, url="https://example.com/b", events=["job.dead"])
    mine, theirs = make_task(), make_task(tenant_id=OTHER_TENANT)
    mine_job, theirs_job = running_job(mine), running_job(theirs)
    record_results(worker_id=WORKER, results=[dead(mine_job), dead(theirs_job)])
    [a] = notification_jobs(OWNER)
    [b] = notification_jobs(OTHER_TENANT)
    assert (a.request_url, json.loads(a.request_body)["data"]["job_id"]) == ("https://example.com/a", str(mine_job.id))
    assert (b.request_url, json.loads(b.request_body)["data"]["job_id"]) == (
        "https://example.com/b",
        str(theirs_job.id),
    )


def test_a_dead_notification_job_notifies_nothing_and_counts_against_no_task():
    subscribe(OWNER)
    task = make_task(auto_pause_after=1)
    record_results(worker_id=WORKER, results=[dead(running_job(task))])
    before = NotificationEvent.objects.count()
    notification = notification_jobs(OWNER)[0]
    Job.objects.filter(id=notification.id).update(status=JobStatus.RUNNING, worker_id=WORKER, attempt=1, fence=1)
    notification.refresh_from_db()
    record_results(worker_id=WORKER, results=[dead(notification)])
    assert Job.objects.get(id=notification.id).status == JobStatus.DEAD
    assert NotificationEvent.objects.count() == before


def test_the_same_event_twice_is_one_notification():
    subscribe(OWNER)
    task = make_task()
    at = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
    assert emitting.task_completed(tenant_id=OWNER, task_id=task.id, completed_at=at, reason="max_runs", runs=5)
    assert not emitting.task_completed(tenant_id=OWNER, task_id=task.id, completed_at=at, reason="max_runs", runs=5)
    [(kind, data)] = sent(OWNER)
    assert kind == "task.completed"
    assert data == {
        "task_id": str(task.id),
        "job_id": None,
        "completed_at": "2027-03-01T12:00:00.000000Z",
        "reason": "max_runs",
        "runs": 5,
    }


def test_a_job_death_emitted_twice_is_one_notification_and_a_later_attempts_death_another():
    subscribe(OWNER, events=["job.dead"])
    task_id, job_id = uuid.uuid4(), uuid.uuid4()

    def death(attempt):
        return events.job_dead(
            tenant_id=OWNER, task_id=task_id, job_id=job_id, attempt=attempt, http_status=500, error="HTTP 500"
        )

    assert emitting.emit(found=[death(3), death(3)]) == 1  # the same event twice in one write
    assert emitting.emit(found=[death(3)]) == 0  # and again later
    assert emitting.emit(found=[death(4)]) == 1  # dead again after a manual retry: a new event
    assert [data["attempt"] for _, data in sent(OWNER)] == [3, 4]


def test_task_completed_runs_in_the_callers_transaction_and_rolls_back_with_it():
    subscribe(OWNER)
    task = make_task()
    with pytest.raises(RuntimeError), transaction.atomic():
        emitting.task_completed(tenant_id=OWNER, task_id=task.id, completed_at=datetime.now(UTC))
        raise RuntimeError("the transition failed")
    assert sent(OWNER) == [] and not NotificationEvent.objects.exists()


def test_writers_emitting_for_one_tenant_at_once_all_land_in_order():
    """The subscription's row lock orders concurrent writers, so their jobs' scheduled_at never collide."""
    from tests.concurrency import at_once

    subscribe(OWNER, events=["task.completed"])
    base = datetime(2027, 1, 1, tzinfo=UTC)

    def complete_many(writer: int) -> int:
        made = 0
        for n in range(15):
            at = base.replace(second=n, microsecond=writer)
            made += emitting.task_completed(tenant_id=OWNER, task_id=uuid.UUID(int=writer + 1), completed_at=at)
        return made

    assert at_once(complete_many, [(writer,) for writer in range(4)]) == [15] * 4
    jobs = notification_jobs(OWNER)
    assert len(jobs) == 60 and len({job.scheduled_at for job in jobs}) == 60


def test_task_completed_without_a_subscription_writes_nothing():
    assert not emitting.task_completed(tenant_id=OWNER, task_id=uuid.uuid4(), completed_at=datetime.now(UTC))
    assert not NotificationEvent.objects.exists() and not Job.objects.exists()


def test_a_lease_expired_on_the_last_attempt_is_a_dead_job_notification():
    subscribe(OWNER, events=["job.dead"])
    task = make_task(auto_pause_after=0)
    job = running_job(task, attempt=2, max_attempts=2)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL 1 SECOND WHERE id = %s", [job.id.bytes])
    assert sweep_expired_leases(limit=10) == 1
    [(kind, data)] = sent(OWNER)
    assert kind == "job.dead"
    assert (data["job_id"], data["attempt"], data["http_status"], data["error"]) == (
        str(job.id),
        2,
        None,
        "lease expired",
    )


def _statements(results_of) -> int:
    with CaptureQueriesContext(connection) as queries:
        record_results(worker_id=WORKER, results=results_of())
    return len(queries)


def test_a_tenant_without_a_subscription_costs_a_successful_batch_no_extra_statement():
    subscribe(OTHER_TENANT)  # someone else's subscription changes nothing for this tenant
    task = make_task()
    plain = _statements(lambda: [succeeded(running_job(task, scheduled_at=datetime(2026, 1, 1, tzinfo=UTC)))])
    # The count main had before notifications (measured on it): none added for a batch without a dead job.
    assert plain == 7
    dead_batch = _statements(lambda: [dead(running_job(task, scheduled_at=datetime(2026, 1, 2, tzinfo=UTC)))])
    assert dead_batch == plain + 1  # one read of the batch's tenants' subscriptions, nothing written
    assert not NotificationEvent.objects.exists()


def test_event_types_and_keys_are_what_the_api_accepts():
    assert events.EVENT_TYPES == ("job.dead", "task.auto_paused", "task.completed", "task.failing")
    key = events.job_dead(
        tenant_id=OWNER, task_id=uuid.uuid4(), job_id=uuid.uuid4(), attempt=1, http_status=None, error=None
    ).key
    assert len(key) <= events.MAX_KEY_LENGTH
    assert events.channel_id(OWNER) == events.channel_id(OWNER) != events.channel_id(OTHER_TENANT)


def test_the_archiver_purges_events_past_the_history_ttl_in_bounded_batches(store):
    from datetime import timedelta

    from django.utils import timezone

    from workers.archiver import Archiver

    task = make_task()
    old = timezone.now() - timedelta(days=31)
    for n in range(3):
        NotificationEvent.objects.create(
            tenant_id=OWNER, event_type="job.dead", event_key=f"old {n}", task_id=task.id, created_at=old
        )
    kept = NotificationEvent.objects.create(
        tenant_id=OWNER, event_type="job.dead", event_key="recent", task_id=task.id, created_at=timezone.now()
    )
    with override_settings(HISTORY_TTL_SECONDS=30 * 24 * 3600):
        archiver = Archiver(store=store, purge_limit=2)
        first, second = archiver.archive_once(), archiver.archive_once()
    assert (first.notification_events_purged, first.full) == (2, True)
    assert second.notification_events_purged == 1
    assert list(NotificationEvent.objects.values_list("id", flat=True)) == [kept.id]
