"""Run now and dry run: one extra job of a task, due now; or the exact request it would send, sending nothing.

Run now locks the task row (FOR UPDATE) for its short transaction: a pause or
delete racing it waits and then cancels the new job (or the run finds the task
paused), and two runs with one Idempotency-Key are serialised, so the key is
bound once. A paused task runs nothing (409). A key answers its job for
RUN_REQUEST_RETENTION_SECONDS; after that it is forgotten and a run with it is a new run.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction

from domain.ids import new_id
from jobs.queue import bind_run_request, insert_run_now_job, run_request_job
from outbound.attempt_headers import our_headers
from outbound.headers import SIGNATURE_HEADER
from signing.selectors import signing_keys
from tasks.models import Task, TaskStatus
from tasks.selectors import LIVE_STATUSES, task_secret_found
from tasks.targets import dial_verdict

logger = logging.getLogger(__name__)

MASK = "[redacted]"


class RunTaskNotFound(Exception):
    """No live task with this id for this tenant."""


class RunTaskPaused(Exception):
    """The task is paused: nothing of it runs until it is resumed (HTTP 409)."""


def task_run_now(*, tenant_id: str, task_id: uuid.UUID, idempotency_key: str | None = None) -> tuple[uuid.UUID, bool]:
    """Make one job of the task due now; return (job id, created). The same key returns the first job."""
    with transaction.atomic():
        task = (
            Task.objects.select_for_update()
            .filter(pk=task_id, tenant_id=tenant_id, status__in=LIVE_STATUSES)
            .only("id", "status")
            .first()
        )
        if task is None:
            raise RunTaskNotFound(str(task_id))
        if idempotency_key is not None:
            # Read under the task's lock: a concurrent run with this key waits above, then finds ours.
            earlier = run_request_job(
                task_id=task_id,
                idempotency_key=idempotency_key,
                retention_seconds=settings.RUN_REQUEST_RETENTION_SECONDS,
            )
            if earlier is not None:
                return earlier, False
        if task.status == TaskStatus.PAUSED:
            raise RunTaskPaused(str(task_id))
        job_id = new_id()
        if not insert_run_now_job(tenant_id=tenant_id, task_id=task_id, job_id=job_id):
            raise RunTaskNotFound(str(task_id))  # not reachable while we hold the row: it is active
        if idempotency_key is not None:
            bind_run_request(tenant_id=tenant_id, task_id=task_id, idempotency_key=idempotency_key, job_id=job_id)
    logger.info("task run now", extra={"event": "task_run_now", "task_id": str(task_id), "job_id": str(job_id)})
    return job_id, True


@dataclass(frozen=True)
class DryRun:
    method: str
    url: str
    headers: dict[str, str]
    body: str
    egress_verdict: str  # allowed | refused | unresolved | unknown (tasks.targets.dial_verdict)
    egress_detail: str
    signed: bool
    secret_found: bool | None  # None: the task names no secret; False: the call would fail "secret unavailable"


SIGNING_UNAVAILABLE = "<unavailable: a signing secret does not open; a run would fail and be retried>"


def task_dry_run(*, tenant_id: str, task_id: uuid.UUID, now: datetime | None = None) -> DryRun:
    """The request a run now would send at this instant (credential masked), and the egress verdict; sends nothing.

    The Idempotency-Key and webhook-id are a fresh id standing for the job a run would create;
    the signature is withheld (`v1,<withheld>` per live signing secret): a real one would be a
    signed payload minted with no job and no audit trail.
    """
    task = Task.objects.filter(pk=task_id, tenant_id=tenant_id, status__in=LIVE_STATUSES).first()
    if task is None:
        raise RunTaskNotFound(str(task_id))
    now = now or datetime.now(UTC)
    keys = signing_keys(tenant_ids=[tenant_id]).get(tenant_id, [])
    headers = dict(task.http_headers)
    headers.update(
        our_headers(
            job_id=str(new_id()),
            scheduled_at=now,
            attempt=1,
            sent_at=now,
            timeout_seconds=task.timeout_seconds,
            secret=MASK if task.secret_ref else None,
            signing_keys=keys or [],
            body=task.http_body.encode(),
            withhold_signature=True,
        )
    )
    if keys is None:  # a signing secret does not open: the executor fails the call (retried), never unsigned
        headers[SIGNATURE_HEADER] = SIGNING_UNAVAILABLE
    verdict, detail = dial_verdict(task.http_url)
    return DryRun(
        method=task.http_method,
        url=task.http_url,
        headers=headers,
        body=task.http_body,
        egress_verdict=verdict,
        egress_detail=detail,
        signed=bool(keys),
        secret_found=task_secret_found(task=task),
    )
