"""Notifications end to end: a real run_executor process calls a real receiver on 127.0.0.1, which
verifies each call's Standard Webhooks signature with the tenant's secret (the `standardwebhooks`
package, as a tenant's receiver would); then the deliveries through the API."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.test import override_settings
from standardwebhooks import Webhook

from domain import notification_events as events
from jobs.models import Job, JobStatus
from notifications import events as emitting
from notifications.models import NotificationEvent
from signing.services import signing_secret_create
from tests.factories import make_job, make_task
from tests.notifications.support import notification_jobs
from tests.processes import child_env, start_manage, stop_processes, wait_until
from tests.receivers import Receiver
from tests.tenants import OTHER_TENANT, OWNER

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


@contextmanager
def executor(receiver: Receiver, log: Path, **env: str) -> Iterator[subprocess.Popen]:
    process = start_manage(
        "run_executor",
        "--idle-seconds",
        "0.3",
        "--grace",
        "3",
        env=child_env(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}", **env),
        log_path=log,
    )
    try:
        yield process
    finally:
        [code] = stop_processes(process)
        output = log.read_text()
        assert code == 0 and "Traceback" not in output, output


def _verified(receiver: Receiver, path: str, secret: str) -> list[dict]:
    """Every call `receiver` got on `path`, each verified with `secret` (raises on a bad signature)."""
    return [
        Webhook(secret).verify(call.body, {name: value for name, value in call.headers.items()})
        for call in receiver.received(path)
    ]


def _subscribe(client, url: str, **fields) -> None:
    response = client.put("/v1/notifications", {"url": url, **fields}, format="json")
    assert response.status_code == 201, response.content


def test_each_event_is_delivered_signed_and_listed_as_a_delivery(receiver, tmp_path, owner, other_tenant):
    _, secret = signing_secret_create(tenant_id=OWNER)
    with override_settings(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}"):
        _subscribe(owner, receiver.url("/notify"), events=list(events.EVENT_TYPES), failing_after=1)
        _subscribe(other_tenant, receiver.url("/other"), events=list(events.EVENT_TYPES))
    task = make_task(http_url=receiver.url("/status/500"), max_attempts=1, auto_pause_after=1)
    job = make_job(task, max_attempts=1)
    emitting.task_completed(tenant_id=OWNER, task_id=task.id, completed_at=datetime(2027, 1, 1, tzinfo=UTC))
    with executor(receiver, tmp_path / "executor.log"):
        wait_until(lambda: len(receiver.received("/notify")) >= 4, what="four notifications")
    payloads = _verified(receiver, "/notify", secret)
    by_type = {payload["type"]: payload for payload in payloads}
    assert sorted(by_type) == sorted(events.EVENT_TYPES) and len(payloads) == 4
    assert by_type["job.dead"]["data"]["job_id"] == str(job.id)
    assert by_type["job.dead"]["data"]["http_status"] == 500
    assert by_type["task.failing"]["data"]["consecutive_failures"] == 1
    assert by_type["task.auto_paused"]["data"]["task_id"] == str(task.id)
    assert by_type["task.completed"]["data"]["task_id"] == str(task.id)
    # webhook-id is the event id, the body's id.
    for call in receiver.received("/notify"):
        assert call.headers["webhook-id"] in {payload["id"] for payload in payloads}
    assert receiver.received("/other") == []  # the other tenant had no event
    deliveries = owner.get("/v1/notifications/deliveries?limit=3").json()
    rest = owner.get(f"/v1/notifications/deliveries?cursor={deliveries['next_cursor']}").json()
    listed = deliveries["results"] + rest["results"]
    assert rest["next_cursor"] is None
    assert {row["event_type"] for row in listed} == set(events.EVENT_TYPES)
    assert {row["event_id"] for row in listed} == {payload["id"] for payload in payloads}
    assert all((row["status"], row["attempts"], row["http_status"]) == ("succeeded", 1, 200) for row in listed)
    assert all(row["finished_at"] is not None for row in listed)
    created = [row["created_at"] for row in listed]
    assert created == sorted(created, reverse=True)  # newest first
    assert other_tenant.get("/v1/notifications/deliveries").json()["results"] == []
    assert owner.get("/v1/tasks").json()["results"][0]["id"] == str(task.id)  # the only task listed
    assert len(owner.get("/v1/tasks").json()["results"]) == 1


def test_a_failing_receiver_gets_its_retries_then_the_delivery_is_dead_and_notifies_nothing(receiver, tmp_path, owner):
    signing_secret_create(tenant_id=OWNER)
    with override_settings(EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}"):
        _subscribe(owner, receiver.url("/status/500"), events=["job.dead", "task.failing"], failing_after=1)
    task = make_task(http_url=receiver.url("/status/502"), max_attempts=1, auto_pause_after=0)
    make_job(task, max_attempts=1)
    env = {"NOTIFICATION_MAX_ATTEMPTS": "3", "NOTIFICATION_BACKOFF_BASE_SECONDS": "1"}
    with executor(receiver, tmp_path / "executor.log", **env):
        wait_until(
            lambda: Job.objects.filter(task_id=events.channel_id(OWNER), status=JobStatus.DEAD).count() == 2,
            timeout=60,
            what="both notifications dead",
        )
    notifications = notification_jobs(OWNER)
    assert len(notifications) == 2  # job.dead and task.failing: none about their own deaths
    assert all((job.status, job.attempt, job.http_status) == (JobStatus.DEAD, 3, 500) for job in notifications)
    assert len(receiver.received("/status/500")) == 6  # each notification's budget, no more
    assert NotificationEvent.objects.count() == 2
    listed = owner.get("/v1/notifications/deliveries").json()["results"]
    assert sorted(row["event_type"] for row in listed) == ["job.dead", "task.failing"]
    assert all((row["status"], row["attempts"], row["http_status"]) == ("dead", 3, 500) for row in listed)
    # The notifications failing counted against no task: the task's own health saw one dead job.
    task.refresh_from_db()
    assert task.consecutive_failures == 1 and task.status == "active"
    assert OTHER_TENANT not in {job.tenant_id for job in Job.objects.all()}
    # Once the receiver is fixed, the tenant may give a dead notification one more attempt.
    retried = owner.post(f"/v1/jobs/{notifications[0].id}/retry")
    assert retried.status_code == 202, retried.content
    again = Job.objects.get(id=notifications[0].id)
    assert (again.status, again.max_attempts) == (JobStatus.PENDING, 4)
