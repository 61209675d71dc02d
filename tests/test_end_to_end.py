"""The whole product once: the API, the four loops as real processes, a real endpoint.

A tenant creates two one-shot tasks through the API. The scheduler turns them
into jobs, the executor fires them on their second, the archiver moves the
success to the history store, the failure dies into the DLQ, and a manual
retry through the API gives it a fresh budget under the same job id.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.models import Job, JobStatus
from tests.end_to_end import every_loop, one_shot
from tests.processes import child_env, wait_until
from tests.receivers import Receiver

pytestmark = pytest.mark.django_db(transaction=True)

TENANT = "tenant-e2e"


def test_a_task_flows_from_the_api_through_every_loop_to_history_and_the_dlq(tenant_client, settings, tmp_path):
    with Receiver() as receiver:
        allow = f"127.0.0.1:{receiver.port}"
        settings.EGRESS_ALLOWLIST = allow
        client = tenant_client(TENANT)
        run_at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
        ok = one_shot(client, "ok", receiver.url("/hello"), run_at, headers={"X-Order": "ok"})
        failing = one_shot(
            client,
            "failing",
            receiver.url("/status/500"),
            run_at,
            headers={"X-Order": "failing"},
            max_attempts=2,
            backoff_base_seconds=1,
        )

        env = child_env(EGRESS_ALLOWLIST=allow, ARCHIVE_SUCCEEDED_AFTER_SECONDS="1")
        with every_loop(env, tmp_path):
            # The success: fired on its second with our headers, then archived to history.
            wait_until(lambda: receiver.received("/hello"), timeout=60, what="the call to /hello")
            (call,) = receiver.received("/hello")
            assert call.at >= run_at.timestamp() - 0.05, "fired before its second"
            assert call.body == b"hello"
            assert call.headers["X-Order"] == "ok"
            assert call.headers["X-Attempt"] == "1"
            assert call.headers["X-Scheduled-At"].startswith(run_at.strftime("%Y-%m-%dT%H:%M:%S"))
            job_id = call.headers["Idempotency-Key"]
            wait_until(lambda: not Job.objects.filter(id=job_id).exists(), timeout=60, what="archiving")
            archived = client.get(f"/v1/jobs/{job_id}").json()
            assert (archived["status"], archived["archived"], archived["http_status"]) == ("succeeded", True, 200)
            history = client.get(f"/v1/tasks/{ok['id']}/history").json()["results"]
            assert [job["id"] for job in history] == [job_id]

            # The failure: two attempts, then dead in the tenant's DLQ.
            wait_until(
                lambda: Job.objects.filter(task_id=failing["id"], status=JobStatus.DEAD).exists(),
                timeout=60,
                what="the failing job to die",
            )
            dlq = client.get("/v1/dlq").json()["results"]
            assert [(job["task_id"], job["attempt"], job["http_status"]) for job in dlq] == [(failing["id"], 2, 500)]
            assert len(receiver.received("/status/500")) == 2

            # Manual retry: same id, fresh budget of the task's max_attempts, attempts keep counting.
            dead_id = dlq[0]["id"]
            assert client.post(f"/v1/jobs/{dead_id}/retry").status_code == 202
            assert client.post(f"/v1/jobs/{dead_id}/retry").status_code == 409
            wait_until(
                lambda: Job.objects.filter(id=dead_id, status=JobStatus.DEAD, attempt=4).exists(),
                timeout=60,
                what="the retried job to die again",
            )
            calls = receiver.received("/status/500")
            assert [c.headers["X-Attempt"] for c in calls] == ["1", "2", "3", "4"]
            assert {c.headers["Idempotency-Key"] for c in calls} == {dead_id}
