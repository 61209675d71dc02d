"""What the job API returns (jobs are read-only for tenants: no input serializers)."""

from __future__ import annotations

import json

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from jobs.models import JobStatus


class JobRequestOutput(serializers.Serializer):
    method = serializers.CharField(source="request_method")
    url = serializers.CharField(source="request_url")


class AttemptOutput(serializers.Serializer):
    """One entry of a job's attempt log (the last 20 attempts are kept)."""

    attempt = serializers.IntegerField()
    claimed_at = serializers.CharField(
        allow_null=True, help_text="when an executor claimed the job, UTC (YYYY-MM-DD HH:MM:SS.fff)"
    )
    started_at = serializers.CharField(
        help_text="when the call began (UTC); for an expired lease, when it was due to begin"
    )
    finished_at = serializers.CharField(
        help_text="when its result was written, or the reconciler took back its expired lease (UTC)"
    )
    duration_ms = serializers.IntegerField(allow_null=True, help_text="null when no result came back")
    status = serializers.CharField(
        help_text="the job's status after it: succeeded, pending (a retry), dead or cancelled"
    )
    http_status = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True)


def attempt_log(text: str | None) -> list[dict]:
    """The attempt log's entries, oldest first, from its JSON text (none before the first result)."""
    if not text:
        return []
    entries = json.loads(text)
    return entries if isinstance(entries, list) else []


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
    error = serializers.CharField(allow_null=True)
    response_body = serializers.CharField(allow_null=True)
    request = JobRequestOutput(source="*")
    attempts = serializers.SerializerMethodField()
    archived = serializers.BooleanField()

    @extend_schema_field(AttemptOutput(many=True))
    def get_attempts(self, job) -> list[dict]:
        return attempt_log(job.attempts)


class JobPage(serializers.Serializer):
    results = JobOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)
