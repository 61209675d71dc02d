"""What the job API returns (jobs are read-only for tenants: no input serializers)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from domain.attempt_log import read_attempts
from jobs.models import JobStatus
from tasks.labels import read_labels


class JobRequestOutput(serializers.Serializer):
    method = serializers.CharField(source="request_method")
    url = serializers.CharField(source="request_url")


class AttemptOutput(serializers.Serializer):
    """One entry of a job's attempt log (the last 20 attempts are kept; `domain.attempt_log`)."""

    attempt = serializers.IntegerField()
    started_at = serializers.DateTimeField(
        allow_null=True,
        help_text="when the call began; for an expired lease, when it was due to begin (null without a duration)",
    )
    finished_at = serializers.DateTimeField(
        help_text="when its result was written, or the reconciler took back its expired lease"
    )
    duration_ms = serializers.IntegerField(allow_null=True, help_text="from started_at to finished_at, in milliseconds")
    status = serializers.CharField(
        help_text="the job's status after it: succeeded, pending (a retry), dead or cancelled"
    )
    http_status = serializers.IntegerField(allow_null=True, help_text="null when no response came back")
    error = serializers.CharField(allow_null=True)


# One instance for every entry: a serializer built per job deep-copies its fields each time.
_ATTEMPT = AttemptOutput()


class JobOutput(serializers.Serializer):
    """A `jobs.selectors.JobView`: from MySQL (`archived` false) or the history store (true)."""

    id = serializers.UUIDField()
    task_id = serializers.UUIDField()
    scheduled_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    attempt = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    priority = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    http_status = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(
        allow_null=True,
        help_text="the last error; for a skipped job, or one a newer run replaced, the reason: overlap:skip, "
        "overlap:buffer_one, overlap:replaced, calendar:<name>",
    )
    response_body = serializers.CharField(allow_null=True)
    request = JobRequestOutput(source="*")
    attempts = serializers.SerializerMethodField()  # from the log's text (domain.attempt_log)
    labels = serializers.SerializerMethodField(
        help_text="the task's labels when this job was made (a relabelled task's earlier runs keep theirs)"
    )
    archived = serializers.BooleanField()

    @extend_schema_field(AttemptOutput(many=True))
    def get_attempts(self, job) -> list[dict]:
        return [_ATTEMPT.to_representation(attempt) for attempt in read_attempts(job.attempts)]

    @extend_schema_field(serializers.DictField(child=serializers.CharField()))
    def get_labels(self, job) -> dict[str, str]:
        return read_labels(job.labels)


class JobPage(serializers.Serializer):
    results = JobOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)
