"""POST /v1/tasks/{id}/run (run now, idempotent) and /dry-run (the exact request, nothing sent)."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from jobs.models import Job, JobStatus, RunRequest
from jobs.queue import JobResult, Outcome, claim_due, record_results
from outbound.signature import key_of, signature
from signing.services import signing_secret_create
from tests.factories import make_task
from tests.receivers import ConnectionTrap
from workers.archiver import Archiver

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(owner):
    return owner


def test_run_now_makes_one_pending_job_due_now_like_any_other(client, store):
    task = make_task(http_url="https://example.com/now", http_body='{"a": 1}', priority=2, max_attempts=7)
    response = client.post(f"/v1/tasks/{task.pk}/run")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert response["Location"] == f"/v1/jobs/{job.pk}"
    assert (job.status, job.attempt, job.max_attempts, job.priority) == (JobStatus.PENDING, 0, 7, 2)
    assert (job.request_url, job.request_body) == ("https://example.com/now", '{"a": 1}')
    assert job.scheduled_at == job.next_attempt_at and job.scheduled_at.microsecond != 0
    # Claimed and fenced like any other job.
    (claimed,) = claim_due(worker_id="w", limit=10, lookahead_seconds=1)
    assert (claimed.id, claimed.attempt) == (job.pk, 1)
    stale = record_results(worker_id="w", results=[JobResult(job.pk, 0, 0, Outcome.SUCCEEDED, http_status=200)])
    assert stale.dropped and not stale.written  # attempt is the fence, for a run now too
    record_results(worker_id="w", results=[JobResult(job.pk, 1, 1, Outcome.SUCCEEDED, http_status=200)])
    task.refresh_from_db()  # and it counts in the task's health like a scheduled run
    assert (task.last_run_job_id, task.last_run_status, task.last_run_http_status) == (job.pk, "succeeded", 200)


def test_two_runs_without_a_key_make_two_jobs(client, store):
    task = make_task()
    first = client.post(f"/v1/tasks/{task.pk}/run").json()["id"]
    second = client.post(f"/v1/tasks/{task.pk}/run").json()["id"]
    assert first != second and Job.objects.filter(task=task).count() == 2


def test_the_same_idempotency_key_answers_200_with_the_first_job(client, store):
    task = make_task()
    first = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="run-1")
    again = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="run-1")
    other = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="run-2")
    assert (first.status_code, again.status_code, other.status_code) == (202, 200, 202)
    assert again.json()["id"] == first.json()["id"] != other.json()["id"]
    assert Job.objects.filter(task=task).count() == 2 and RunRequest.objects.count() == 2


@pytest.mark.parametrize("key", ["", " padded ", "x" * 256, "caf\u00e9"])
def test_a_bad_idempotency_key_is_a_400_naming_it(client, key):
    task = make_task()
    response = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["Idempotency-Key"]
    assert not Job.objects.exists()


def test_a_paused_task_does_not_run_409_and_a_deleted_one_is_404(client):
    task = make_task()
    client.post(f"/v1/tasks/{task.pk}/pause")
    response = client.post(f"/v1/tasks/{task.pk}/run")
    assert response.status_code == 409 and response.json()["type"].endswith("/task-paused")
    client.delete(f"/v1/tasks/{task.pk}")
    assert client.post(f"/v1/tasks/{task.pk}/run").status_code == 404
    assert client.post(f"/v1/tasks/{task.pk}/dry-run").status_code == 404
    assert not Job.objects.exists()


def test_another_tenants_task_is_a_404(tenant_client):
    task = make_task()
    other = tenant_client("tenant-b")
    assert other.post(f"/v1/tasks/{task.pk}/run").status_code == 404
    assert other.post(f"/v1/tasks/{task.pk}/dry-run").status_code == 404
    assert other.post("/v1/tasks/not-an-id/run").status_code == 404
    assert not Job.objects.exists()


def test_pausing_after_a_run_now_cancels_its_job(client, store):
    task = make_task()
    job_id = client.post(f"/v1/tasks/{task.pk}/run").json()["id"]
    client.post(f"/v1/tasks/{task.pk}/pause")
    assert Job.objects.get(pk=job_id).status == JobStatus.CANCELLED


def test_dry_run_shows_the_exact_request_signed_and_masked_and_sends_nothing(client, fake_dns):
    _, secret = signing_secret_create(tenant_id="tenant-a")
    task = make_task(
        http_url="https://example.com/hook",
        http_method="PUT",
        http_headers={"Content-Type": "application/json"},
        http_body='{"k": "v"}',
        secret_ref="hook-token",
        timeout_seconds=20,
    )
    response = client.post(f"/v1/tasks/{task.pk}/dry-run")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["sent"], body["signed"]) == (False, True)
    assert body["egress"] == {"verdict": "allowed", "detail": "the executor would connect"}
    request = body["request"]
    assert (request["method"], request["url"], request["body"]) == ("PUT", "https://example.com/hook", '{"k": "v"}')
    headers = request["headers"]
    assert headers["Content-Type"] == "application/json" and headers["Authorization"] == "[redacted]"
    assert headers["X-Attempt"] == "1" and headers["webhook-id"] == headers["Idempotency-Key"]
    assert {"X-Deadline", "X-Scheduled-At", "webhook-timestamp"} <= set(headers)
    # The signature's shape, its value withheld: a dry run must not mint a payload a receiver would accept.
    assert headers["webhook-signature"] == "v1,<withheld>"
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(request["body"].encode(), headers)
    real = signature(
        keys=[key_of(secret)],
        msg_id=headers["webhook-id"],
        timestamp=int(headers["webhook-timestamp"]),
        body=request["body"].encode(),
    )
    assert real.removeprefix("v1,") not in response.content.decode()
    assert not Job.objects.exists()


def test_dry_run_during_a_rotation_shows_one_withheld_signature_per_live_secret(client, fake_dns):
    signing_secret_create(tenant_id="tenant-a")
    signing_secret_create(tenant_id="tenant-a", previous_expires_in=dt.timedelta(hours=1))
    task = make_task()

    headers = client.post(f"/v1/tasks/{task.pk}/dry-run").json()["request"]["headers"]

    assert headers["webhook-signature"] == "v1,<withheld> v1,<withheld>"


def test_dry_run_says_signing_is_unavailable_when_a_signing_secret_does_not_open(client, fake_dns, settings):
    """Not "unsigned": the executor would fail such a call and retry it, and the dry run says so."""
    from cryptography.fernet import Fernet

    signing_secret_create(tenant_id="tenant-a")
    settings.SECRETS_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    task = make_task()

    answer = client.post(f"/v1/tasks/{task.pk}/dry-run").json()

    assert answer["request"]["headers"]["webhook-signature"].startswith("<unavailable")
    assert answer["signed"] is False


@pytest.mark.parametrize(
    "url, verdict",
    [
        ("https://internal.example.net/hook", "refused"),  # resolves to 10.1.2.3
        ("https://rebind.example.net/hook", "refused"),  # one public, one loopback address
        ("https://nowhere.example.com/hook", "unresolved"),
        ("https://api.example.org/hook", "allowed"),
    ],
)
def test_dry_run_gives_the_dial_time_egress_verdict_without_naming_addresses(client, fake_dns, url, verdict):
    task = make_task(http_url=url)
    body = client.post(f"/v1/tasks/{task.pk}/dry-run").json()
    assert body["egress"]["verdict"] == verdict
    assert "10.1.2.3" not in body["egress"]["detail"] and "127.0.0.1" not in body["egress"]["detail"]
    assert body["signed"] is False and "webhook-signature" not in body["request"]["headers"]


def test_dry_run_of_an_allowed_loopback_target_connects_to_nothing(client, settings):
    # A real listener the egress allowlist admits: the verdict is "allowed", and still no connection.
    with ConnectionTrap() as trap:
        settings.EGRESS_ALLOWLIST = f"127.0.0.1:{trap.port}"
        task = make_task(http_url=f"http://127.0.0.1:{trap.port}/hook")
        body = client.post(f"/v1/tasks/{task.pk}/dry-run").json()
        assert body["egress"]["verdict"] == "allowed" and body["sent"] is False
        assert client.post(f"/v1/tasks/{task.pk}/dry-run").status_code == 200
        time.sleep(0.2)  # a connection the call had opened would have been accepted by now
        assert trap.connections == 0
    assert not Job.objects.exists()


def test_dry_run_says_whether_the_tasks_secret_still_exists(client, fake_dns):
    from vault.services import secret_delete, secret_put

    secret_put(tenant_id="tenant-a", name="hook-token", value="Bearer s3cr3t-value")
    secret_put(tenant_id="tenant-b", name="other-token", value="Bearer theirs")
    task = make_task(secret_ref="hook-token")
    found = client.post(f"/v1/tasks/{task.pk}/dry-run").json()
    assert found["secret_found"] is True
    assert found["request"]["headers"]["Authorization"] == "[redacted]"
    assert "s3cr3t-value" not in str(found)
    secret_delete(tenant_id="tenant-a", name="hook-token")
    # Deleted since the task was made: a real call would fail "secret unavailable".
    assert client.post(f"/v1/tasks/{task.pk}/dry-run").json()["secret_found"] is False
    # Another tenant's secret of that name is no secret of this task's.
    foreign = make_task(secret_ref="other-token")
    assert client.post(f"/v1/tasks/{foreign.pk}/dry-run").json()["secret_found"] is False
    assert client.post(f"/v1/tasks/{make_task().pk}/dry-run").json()["secret_found"] is None


def _age_key(key: str, age: dt.timedelta) -> None:
    RunRequest.objects.filter(idempotency_key=key).update(created_at=timezone.now() - age)


def test_a_replay_within_the_retention_answers_the_same_job_even_once_archived(client, store, settings):
    settings.RUN_REQUEST_RETENTION_SECONDS = 24 * 3600
    task = make_task()
    first = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="once").json()["id"]
    Job.objects.filter(pk=first).update(
        status=JobStatus.SUCCEEDED, attempt=1, finished_at=timezone.now() - dt.timedelta(hours=2)
    )
    assert Archiver(store=store).archive_once().deleted == 1  # the job left the queue for the history
    _age_key("once", dt.timedelta(hours=23))

    again = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="once")

    assert again.status_code == 200, again.content
    assert again.json()["id"] == first and again.json()["archived"] is True
    assert not Job.objects.exists()  # nothing ran again


def test_a_key_past_its_retention_runs_the_task_as_a_new_request(client, store, settings):
    settings.RUN_REQUEST_RETENTION_SECONDS = 3600
    task = make_task()
    first = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="hourly").json()["id"]
    _age_key("hourly", dt.timedelta(hours=1, minutes=1))  # expired, not purged yet

    late = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="hourly")

    assert late.status_code == 202, late.content
    second = late.json()["id"]
    assert second != first and Job.objects.filter(task=task).count() == 2
    # The key is bound afresh, to the new job, for a new retention.
    (bound,) = RunRequest.objects.filter(idempotency_key="hourly")
    assert str(bound.job_id) == second and timezone.now() - bound.created_at < dt.timedelta(minutes=1)
    replay = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="hourly")
    assert (replay.status_code, replay.json()["id"]) == (200, second)

    # Once the archiver has purged the key, it is a new request too.
    _age_key("hourly", dt.timedelta(hours=2))
    assert Archiver(store=store).archive_once().run_requests_purged == 1
    assert not RunRequest.objects.exists()
    third = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="hourly")
    assert third.status_code == 202 and third.json()["id"] not in {first, second}


def test_a_replay_whose_job_is_gone_from_queue_and_history_is_a_409_not_a_null_200(client, store):
    task = make_task()
    first = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="lost").json()["id"]
    Job.objects.filter(pk=first).delete()  # e.g. the history store was switched: the job is nowhere

    again = client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="lost")

    assert again.status_code == 409, again.content
    body = again.json()
    assert body["type"].endswith("/idempotency-key-job-gone") and body["job_id"] == first
    assert not Job.objects.exists()  # not run again under the key
    assert client.post(f"/v1/tasks/{task.pk}/run", HTTP_IDEMPOTENCY_KEY="new-key").status_code == 202
