"""Signed calls, end to end: a real executor signs, a real receiver on 127.0.0.1 verifies with standardwebhooks."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db.utils import OperationalError
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from jobs.models import Job, JobStatus
from outbound.client import ERROR_SIGNING, DeliveryClient, delivery_headers
from signing.services import signing_secret_create, signing_secret_delete
from tests.processes import wait_until
from tests.receivers import Receiver
from tests.workers.executor_db import bulk_jobs, db_now
from tests.workers.executor_helpers import claimed, policy_for, send
from workers.executor.credentials import Credentials
from workers.executor.runner import Executor, ExecutorConfig
from workers.executor.signing import SigningKeys


def _run_executor(receiver: Receiver, signing: SigningKeys, until) -> None:
    executor = Executor(
        ExecutorConfig(worker_id="w-sign", concurrency=20, poll_seconds=0.3, grace_seconds=5.0),
        client=DeliveryClient(policy=policy_for(f"127.0.0.1:{receiver.port}")),
        credentials=Credentials(signing=signing),
    )
    started = threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(executor.run(started=started.set)), daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        wait_until(until)
    finally:
        executor.request_stop()
        thread.join(30)


@pytest.mark.django_db(transaction=True)
def test_calls_verify_with_the_standardwebhooks_library_under_both_secrets_of_a_rotation():
    _, old = signing_secret_create(tenant_id="tenant-a")
    _, new = signing_secret_create(tenant_id="tenant-a")
    _, foreign = signing_secret_create(tenant_id="tenant-b")
    with Receiver() as receiver:
        body = '{"kind": "daily", "caf\u00e9": 1}'
        ids = bulk_jobs(3, url=receiver.url("/signed"), request_body=body, next_attempt_at=db_now())
        signing = SigningKeys()
        _run_executor(
            receiver, signing, lambda: Job.objects.filter(id__in=ids, status=JobStatus.SUCCEEDED).count() == 3
        )
        calls = receiver.received("/signed")
    assert len(calls) == 3 and signing.loads == 1  # one key query for the whole claimed batch
    for call in calls:
        headers = dict(call.headers.items())
        assert headers["webhook-id"] == headers["Idempotency-Key"]
        assert len(headers["webhook-signature"].split(" ")) == 2
        assert Webhook(old).verify(call.body, headers) == {"kind": "daily", "caf\u00e9": 1}
        Webhook(new).verify(call.body, headers)
        with pytest.raises(WebhookVerificationError):
            Webhook(foreign).verify(call.body, headers)
        # X-Deadline: the send time plus the task's timeout (5 s in bulk_jobs).
        deadline = datetime.strptime(headers["X-Deadline"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        sent = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
        assert timedelta(seconds=4) <= deadline - sent <= timedelta(seconds=6)


@pytest.mark.django_db(transaction=True)
def test_a_tenant_without_a_signing_secret_gets_unsigned_calls_with_a_deadline():
    with Receiver() as receiver:
        ids = bulk_jobs(1, url=receiver.url("/plain"), tenant_id="tenant-z", next_attempt_at=db_now())
        _run_executor(receiver, SigningKeys(), lambda: Job.objects.get(id=ids[0]).status == JobStatus.SUCCEEDED)
        (call,) = receiver.received("/plain")
    assert "webhook-signature" not in call.headers and "X-Deadline" in call.headers


@pytest.mark.django_db
def test_keys_are_cached_per_process_and_a_deleted_secret_stops_signing_after_the_ttl():
    secret, _ = signing_secret_create(tenant_id="tenant-a")
    now = [0.0]
    keys = SigningKeys(ttl_seconds=10, clock=lambda: now[0])
    keys.refresh(["tenant-a", "tenant-b"])
    keys.refresh(["tenant-a", "tenant-b"])
    assert keys.loads == 1 and len(keys.keys_for("tenant-a")) == 1 and keys.keys_for("tenant-b") == []
    signing_secret_delete(tenant_id="tenant-a", secret_id=secret.pk)
    assert len(keys.keys_for("tenant-a")) == 1  # still cached
    now[0] = 10.0
    keys.refresh(["tenant-a"])
    assert keys.loads == 2 and keys.keys_for("tenant-a") == []


def test_keys_that_could_not_be_loaded_fail_the_attempt_instead_of_sending_unsigned():
    def broken(**_):
        raise OperationalError(2006, "MySQL server has gone away")

    keys = SigningKeys(load=broken)
    keys.refresh(["tenant-a"])  # never raises: the claim is already committed
    job = claimed("https://example.com/hook")
    with pytest.raises(Exception, match="tenant-a"):
        Credentials(signing=keys).for_call(job)
    assert send(job, policy=policy_for("127.0.0.1:9"), signing=keys).error == ERROR_SIGNING


def test_the_signature_covers_the_exact_body_sent():
    secret_keys = SigningKeys(load=lambda **_: {"tenant-a": [b"k" * 32]})
    secret_keys.refresh(["tenant-a"])
    job = claimed("https://example.com/hook", body="x" * 10)
    sent_at = datetime.fromtimestamp(time.time(), UTC)
    headers = delivery_headers(job, secret=None, signing_keys=secret_keys.keys_for("tenant-a"), sent_at=sent_at)
    import base64

    Webhook(base64.b64encode(b"k" * 32).decode()).verify(b"x" * 10, dict(headers.items()), json_parse=False)


@pytest.mark.django_db(transaction=True)
def test_a_signing_secret_that_no_longer_opens_fails_the_attempt_and_is_retried_never_sent_unsigned(settings):
    """The vault's old key dropped without `rotate_signing_secret_keys`: the row does not open under any key."""
    from cryptography.fernet import Fernet

    signing_secret_create(tenant_id="tenant-a")
    settings.SECRETS_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with Receiver() as receiver:
        ids = bulk_jobs(1, url=receiver.url("/must-be-signed"), next_attempt_at=db_now())

        def retried():
            job = Job.objects.get(id=ids[0])
            return job.attempt == 1 and job.status == JobStatus.PENDING

        _run_executor(receiver, SigningKeys(), retried)
        assert receiver.received("/must-be-signed") == []
    job = Job.objects.get(id=ids[0])
    assert ERROR_SIGNING in job.error
    assert job.next_attempt_at > db_now()  # retried after the backoff, not dropped


@pytest.mark.django_db
def test_a_secret_that_does_not_open_is_remembered_for_the_ttl_not_read_again_per_claim(settings):
    from cryptography.fernet import Fernet

    signing_secret_create(tenant_id="tenant-a")
    settings.SECRETS_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    now = [0.0]
    keys = SigningKeys(ttl_seconds=10, clock=lambda: now[0])
    keys.refresh(["tenant-a"])
    keys.refresh(["tenant-a"])
    assert keys.loads == 1
    with pytest.raises(Exception, match="tenant-a"):
        keys.keys_for("tenant-a")
    now[0] = 10.0
    keys.refresh(["tenant-a"])
    assert keys.loads == 2
