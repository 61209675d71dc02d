"""What the job API returns (jobs are read-only for tenants: no input serializers)."""

from __future__ import annotations

from rest_framework import serializers

from jobs.models import JobStatus


class JobRequestOutput(serializers.Serializer):
    method = serializers.CharField(source="request_method")
    url = serializers.CharField(source="request_url")


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
    archived = serializers.BooleanField()


class JobPage(serializers.Serializer):
    results = JobOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)
