"""Tenant API for jobs: one job, a task's history, the DLQ, manual retry, cancel, run now and dry run.

Thin views over jobs.selectors and jobs.services. The tenant comes from the
token only; another tenant's job or task is a 404 like a missing one. A history
store that cannot answer makes the request a 503: a page without it would look
complete.
"""

from __future__ import annotations

import logging
import uuid

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.params import (
    CURSOR_PARAMETER,
    ID_PARAMETER_SCHEMA,
    LIMIT_PARAMETER,
    OPAQUE_CURSOR_PARAMETER,
    invalid_param,
    page_limit,
    query_id,
)
from api.problems import Problem, not_found
from domain.ids import parse_id
from history.base import HistoryUnavailable
from history.stores import get_history_store
from jobs import run_now, selectors
from jobs.models import JobStatus
from jobs.serializers import JobOutput, JobPage
from jobs.services import ChangeOutcome, RetryOutcome, job_cancel, job_retry
from tasks.preconditions import IDEMPOTENCY_KEY_SCHEMA, idempotency_key_problem
from tasks.selectors import task_get

logger = logging.getLogger(__name__)

_PROBLEM = OpenApiResponse(description="application/problem+json")
_LOCATION = OpenApiParameter(
    "Location", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 202], description="/v1/jobs/{id}: the job"
)
_JOB_EXAMPLE = OpenApiExample(
    "a job due now",
    response_only=True,
    status_codes=["202"],
    value={
        "id": "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "task_id": "0194a1b0-0000-7000-8000-000000000001",
        "scheduled_at": "2027-01-04T08:15:02.123456Z",
        "status": "pending",
        "attempt": 0,
        "max_attempts": 5,
        "priority": 5,
        "next_attempt_at": "2027-01-04T08:15:02.123Z",
        "started_at": None,
        "finished_at": None,
        "http_status": None,
        "error": None,
        "response_body": None,
        "request": {"method": "POST", "url": "https://example.com/hooks/report"},
        "attempts": [],
        "archived": False,
    },
)
_DRY_RUN_EXAMPLE = OpenApiExample(
    "a signed request, credential masked, signature withheld",
    response_only=True,
    value={
        "request": {
            "method": "POST",
            "url": "https://example.com/hooks/report",
            "headers": {
                "Content-Type": "application/json",
                "Idempotency-Key": "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                "X-Scheduled-At": "2027-01-04T08:15:02.123Z",
                "X-Attempt": "1",
                "User-Agent": "jobsched-executor/1.0",
                "X-Deadline": "2027-01-04T08:15:32.123Z",
                "Authorization": "[redacted]",
                "webhook-id": "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                "webhook-timestamp": "1799050502",
                "webhook-signature": "v1,<withheld>",
            },
            "body": '{"kind": "daily"}',
        },
        "egress": {"verdict": "allowed", "detail": "the executor would connect"},
        "signed": True,
        "secret_found": True,
        "sent": False,
    },
)


def _job_not_found() -> Problem:
    # Also for a retry of an archived job: the same body as a job that never was, or another tenant's.
    return not_found("job")


def _history_unavailable(exc: HistoryUnavailable) -> Problem:
    logger.warning("history store unavailable", extra={"event": "history_unavailable", "error": str(exc)})
    return Problem(
        503, "history-unavailable", "The job history store is unavailable; try again.", headers={"Retry-After": "5"}
    )


def _path_id(raw: str, not_found: Problem) -> uuid.UUID:
    parsed = parse_id(raw)
    if parsed is None:
        raise not_found
    return parsed


class JobDetailView(APIView):
    @extend_schema(
        operation_id="jobs_get",
        summary="Get one job, from the queue or the history",
        responses={200: JobOutput, 404: _PROBLEM, 503: _PROBLEM},
    )
    def get(self, request: Request, job_id: str) -> Response:
        job_uuid = _path_id(job_id, _job_not_found())
        try:
            job = selectors.job_get(tenant_id=tenant_of(request), job_id=job_uuid, store=get_history_store())
        except HistoryUnavailable as exc:
            raise _history_unavailable(exc) from exc
        if job is None:
            raise _job_not_found()
        return Response(JobOutput(job).data)


_NOT_RETRIED = {
    RetryOutcome.NOT_DEAD: ("job-not-dead", "Only a dead job can be retried; this one is not dead."),
    RetryOutcome.CANCELLED: (
        "job-cancelled",
        "This job was cancelled (by a cancel, a discard from the dead-letter queue, or its task's pause); "
        "a cancelled job cannot be retried.",
    ),
    RetryOutcome.TASK_PAUSED: ("task-paused", "This job's task is paused; resume the task, then retry the job."),
    RetryOutcome.TASK_DELETED: ("task-deleted", "This job's task was deleted; its jobs cannot be retried."),
}


def _not_retried(outcome: RetryOutcome) -> Problem:
    slug, detail = _NOT_RETRIED[outcome]
    return Problem(409, slug, detail)


class JobRetryView(APIView):
    @extend_schema(
        operation_id="jobs_retry",
        summary="Retry a dead job",
        request=None,
        responses={202: JobOutput, 404: _PROBLEM, 409: _PROBLEM},
        description="Put a dead job back in the queue: same id (Idempotency-Key), same scheduled_at, fresh attempts. "
        "409 when the job is not dead, was cancelled, or its task is paused or deleted (the problem type says which).",
    )
    def post(self, request: Request, job_id: str) -> Response:
        job_uuid = _path_id(job_id, _job_not_found())
        tenant_id = tenant_of(request)
        outcome = job_retry(job_id=job_uuid, tenant_id=tenant_id)
        if outcome is RetryOutcome.GONE:
            raise _job_not_found()
        if outcome is not RetryOutcome.REQUEUED:
            raise _not_retried(outcome)
        job = selectors.queued_job(tenant_id=tenant_id, job_id=job_uuid)  # pending, or already claimed again
        return Response(JobOutput(job).data if job else None, status=status.HTTP_202_ACCEPTED)


class JobCancelView(APIView):
    @extend_schema(
        operation_id="jobs_cancel",
        summary="Cancel a pending job",
        request=None,
        responses={202: JobOutput, 404: _PROBLEM, 409: _PROBLEM},
        description="Take a pending job (due, or waiting for a retry) out of the queue for good: it will not run. "
        "A running job is not stopped (409 job-not-pending, like a finished one); its task is not paused.",
    )
    def post(self, request: Request, job_id: str) -> Response:
        job_uuid = _path_id(job_id, _job_not_found())
        tenant_id = tenant_of(request)
        outcome = job_cancel(job_id=job_uuid, tenant_id=tenant_id)
        if outcome is ChangeOutcome.GONE:
            raise _job_not_found()
        if outcome is ChangeOutcome.WRONG_STATUS:
            raise Problem(409, "job-not-pending", "Only a pending job can be cancelled; this one is not pending.")
        job = selectors.queued_job(tenant_id=tenant_id, job_id=job_uuid)  # None only if archived since
        return Response(JobOutput(job).data if job else None, status=status.HTTP_202_ACCEPTED)


_HISTORY_STATUS = OpenApiParameter(
    "status",
    {"type": "string", "enum": list(JobStatus.values)},
    OpenApiParameter.QUERY,
    description="only jobs in this status, e.g. skipped",
)


class TaskHistoryView(APIView):
    @extend_schema(
        operation_id="tasks_history",
        summary="A task's jobs, newest first",
        parameters=[OPAQUE_CURSOR_PARAMETER, LIMIT_PARAMETER, _HISTORY_STATUS],
        responses={200: JobPage, 400: _PROBLEM, 404: _PROBLEM, 503: _PROBLEM},
        description="The task's jobs from the queue and the history store, newest scheduled first. With "
        "`status`, only that status's (e.g. `skipped`: runs the task's overlap policy or calendars did not call, "
        "the reason in `error`); such a page reads at most 2,000 jobs, so it may hold fewer than `limit` while "
        "`next_cursor` says more may follow.",
    )
    def get(self, request: Request, task_id: str) -> Response:
        task_not_found = not_found("task")
        task_uuid = _path_id(task_id, task_not_found)
        limit = page_limit(request)
        cursor_text = request.query_params.get("cursor") or None
        before = selectors.decode_cursor(cursor_text) if cursor_text is not None else None
        if cursor_text is not None and before is None:
            raise invalid_param("cursor", "not a cursor")
        job_status = request.query_params.get("status")
        if job_status is not None and job_status not in JobStatus.values:
            raise invalid_param("status", f"one of {', '.join(JobStatus.values)}")
        tenant_id = tenant_of(request)
        if task_get(tenant_id=tenant_id, task_id=task_uuid) is None:
            raise task_not_found
        try:
            jobs, next_position = selectors.task_history(
                tenant_id=tenant_id,
                task_id=task_uuid,
                before=before,
                limit=limit,
                store=get_history_store(),
                status=job_status,
            )
        except HistoryUnavailable as exc:
            raise _history_unavailable(exc) from exc
        next_cursor = selectors.encode_cursor(next_position) if next_position else None
        return Response({"results": JobOutput(jobs, many=True).data, "next_cursor": next_cursor})


class DeadLetterQueueView(APIView):
    @extend_schema(
        operation_id="dlq_list",
        summary="The tenant's dead-letter queue",
        parameters=[
            CURSOR_PARAMETER,
            LIMIT_PARAMETER,
            OpenApiParameter("task", ID_PARAMETER_SCHEMA, description="only this task's"),
        ],
        responses={200: JobPage, 400: _PROBLEM},
        description="The tenant's dead jobs still in the queue (retryable), newest first.",
    )
    def get(self, request: Request) -> Response:
        limit = page_limit(request)
        before = query_id(request, "cursor", "not a cursor")
        task_uuid = query_id(request, "task", "not a task id")
        jobs, next_id = selectors.dlq_page(tenant_id=tenant_of(request), task_id=task_uuid, before=before, limit=limit)
        return Response({"results": JobOutput(jobs, many=True).data, "next_cursor": str(next_id) if next_id else None})


def _task_paused() -> Problem:
    return Problem(409, "task-paused", "The task is paused; resume it to run it.")


def _run_job_gone(job_id: uuid.UUID) -> Problem:
    # Only when the history lost a job before its TTL (the retention never exceeds it): answering
    # 200 with no job would hide it, running the task again would break the key's promise.
    return Problem(
        409,
        "idempotency-key-job-gone",
        "The job this Idempotency-Key made is in neither the queue nor the history; it is not run again "
        "under this key. Send a new key to run the task.",
        job_id=str(job_id),
    )


class TaskRunView(APIView):
    @extend_schema(
        operation_id="tasks_run",
        summary="Run the task now: one extra job, due now (idempotent with Idempotency-Key)",
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                IDEMPOTENCY_KEY_SCHEMA,
                OpenApiParameter.HEADER,
                description="1-255 visible ASCII characters (inner spaces allowed)",
            ),
            _LOCATION,
        ],
        request=None,
        responses={
            200: OpenApiResponse(JobOutput, description="a replay: the job this Idempotency-Key made"),
            202: OpenApiResponse(JobOutput, description="the new job, due now"),
            400: _PROBLEM,
            404: _PROBLEM,
            409: _PROBLEM,
            503: _PROBLEM,
        },
        examples=[_JOB_EXAMPLE],
        description="202 with the new job and its Location; the same Idempotency-Key again answers 200 with that "
        "job for RUN_REQUEST_RETENTION_SECONDS (by default the history's 30 days), after which the key is forgotten "
        "and runs the task as a new request. The job is like any other (claimed, fenced, retried, counted); its "
        "scheduled_at is the request's instant. A paused task is a 409 task-paused; a key whose job is in neither "
        "the queue nor the history is a 409 idempotency-key-job-gone.",
    )
    def post(self, request: Request, task_id: str) -> Response:
        task_uuid = _path_id(task_id, not_found("task"))
        key = request.headers.get("Idempotency-Key")
        if key is not None and (why := idempotency_key_problem(key)):
            raise invalid_param("Idempotency-Key", why)
        tenant_id = tenant_of(request)
        try:
            job_id, created = run_now.task_run_now(tenant_id=tenant_id, task_id=task_uuid, idempotency_key=key)
        except run_now.RunTaskNotFound:
            raise not_found("task") from None
        except run_now.RunTaskPaused:
            raise _task_paused() from None
        try:
            job = selectors.job_get(tenant_id=tenant_id, job_id=job_id, store=get_history_store())
        except HistoryUnavailable as exc:
            raise _history_unavailable(exc) from exc
        if job is None:
            raise _run_job_gone(job_id)
        location = reverse("job", args=[str(job_id)])
        return Response(
            JobOutput(job).data,
            status=status.HTTP_202_ACCEPTED if created else status.HTTP_200_OK,
            headers={"Location": location},
        )


class DryRunRequestOutput(serializers.Serializer):
    method = serializers.CharField()
    url = serializers.CharField()
    headers = serializers.DictField(child=serializers.CharField())
    body = serializers.CharField(allow_blank=True)


class DryRunEgressOutput(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=["allowed", "refused", "unresolved", "unknown"], source="egress_verdict")
    detail = serializers.CharField(source="egress_detail")


class DryRunOutput(serializers.Serializer):
    request = DryRunRequestOutput(source="*")
    egress = DryRunEgressOutput(source="*")
    signed = serializers.BooleanField()
    secret_found = serializers.BooleanField(
        allow_null=True,
        help_text="null: the task names no secret_ref; false: it names one the tenant no longer has, and a real "
        'call would fail with "secret unavailable" before sending anything',
    )
    sent = serializers.SerializerMethodField()

    def get_sent(self, _: object) -> bool:
        return False


class TaskDryRunView(APIView):
    @extend_schema(
        operation_id="tasks_dry_run",
        summary="The exact request a run would send now (credential masked) and the egress verdict; sends nothing",
        request=None,
        responses={200: DryRunOutput, 404: _PROBLEM},
        examples=[_DRY_RUN_EXAMPLE],
        description="Headers include ours: Idempotency-Key and webhook-id stand for the job a run would create, "
        "Authorization is masked, and webhook-signature shows its shape with the value withheld: `v1,<withheld>` "
        "once per live signing secret (two during a rotation), so a dry run never hands out a signed payload. "
        "The egress verdict is the executor's dial-time check on the URL's current DNS answer.",
    )
    def post(self, request: Request, task_id: str) -> Response:
        task_uuid = _path_id(task_id, not_found("task"))
        try:
            dry_run = run_now.task_dry_run(tenant_id=tenant_of(request), task_id=task_uuid)
        except run_now.RunTaskNotFound:
            raise not_found("task") from None
        return Response(DryRunOutput(dry_run).data)
