"""The list's page read as rows and written out renders exactly what TaskOutput renders."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework import serializers

from api.compiled_representation import CompiledRepresentation
from tasks import selectors
from tasks.models import Overlap, Task, TaskStatus
from tasks.page_json import task_page_json
from tasks.serializers import HttpOutput, LastRunOutput, TaskOutput
from tests.factories import make_task

TENANT = "tenant-page"


def _varied_tasks() -> list[Task]:
    """Every schedule kind and each optional part set and unset, newest first as the page reads them."""
    now = timezone.now()
    made = [
        make_task(tenant_id=TENANT),
        make_task(
            tenant_id=TENANT,
            run_at=now + timedelta(days=1, microseconds=123),
            status=TaskStatus.PAUSED,
            paused_reason="paused by the tenant",
            http_headers={"X-A": "1", "Content-Type": "application/json"},
            http_body='{"k": "v"}',
            labels={"env": "prod", "team": ""},
            secret_ref="webhook-token",
            auto_pause_after=3,
            consecutive_failures=2,
            delete_after_completion=True,
        ),
        make_task(
            tenant_id=TENANT,
            next_run_at=None,
            last_run_job_id=uuid.uuid4(),
            last_run_scheduled_at=now - timedelta(minutes=1),
            last_run_status="failed",
            last_run_http_status=503,
            last_run_at=now,
            timezone="Europe/Madrid",
            cron_expression="0 9 * * 1-5",
            window_seconds=600,
            starts_at=now - timedelta(days=2),
            ends_at=now + timedelta(days=30),
            max_runs=10,
            runs_scheduled=4,
            exclude_calendars=["holidays"],
            overlap=Overlap.SKIP,
            priority=9,
        ),
        make_task(
            tenant_id=TENANT,
            cron_expression=None,
            every_seconds=5400,
            anchor=now - timedelta(hours=1),
            ends_at=now + timedelta(days=3),  # a run limit without max_runs: runs_scheduled shown
            runs_scheduled=2,
            timezone="America/New_York",
            status=TaskStatus.COMPLETED,
            paused_reason="left over from a pause",  # shown only while paused
            last_run_job_id=uuid.uuid4(),
            last_run_scheduled_at=now,
            last_run_status="succeeded",
            last_run_http_status=None,
            last_run_at=None,
        ),
        make_task(tenant_id=TENANT, status=TaskStatus.DELETED, deleted_at=now),  # never on a page
    ]
    live = [task.pk for task in made if task.status != TaskStatus.DELETED]
    # As the single-task answers read them: model instances, with the ORM's converters.
    return list(Task.objects.filter(pk__in=live).order_by("-pk"))


def _drf_rendering(monkeypatch: pytest.MonkeyPatch, tasks: list[Task]) -> Any:
    """TaskOutput with DRF's own Serializer.to_representation everywhere (nested ones too)."""
    with monkeypatch.context() as patched:
        patched.setattr(CompiledRepresentation, "to_representation", serializers.Serializer.to_representation)
        return TaskOutput(tasks, many=True).data


def _page() -> list[Any]:
    rows, next_id = selectors.task_page(tenant_id=TENANT, before=None, limit=50)
    assert next_id is None
    return rows


@pytest.mark.django_db
def test_a_row_holds_what_the_model_instance_holds_in_every_column() -> None:
    tasks = _varied_tasks()

    rows = _page()

    assert [row.id for row in rows] == [task.pk for task in tasks]
    for row, task in zip(rows, tasks, strict=True):
        for field in Task._meta.concrete_fields:
            assert getattr(row, field.attname) == getattr(task, field.attname), field.attname
            assert type(getattr(row, field.attname)) is type(getattr(task, field.attname)), field.attname


@pytest.mark.django_db
def test_the_page_renders_as_task_output_renders_it(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _varied_tasks()

    page = task_page_json(_page())

    for expected in (_drf_rendering(monkeypatch, tasks), TaskOutput(tasks * 2, many=True).data[len(tasks) :]):
        assert page == expected
        assert [list(task) for task in page] == [list(task) for task in expected]  # the same key order too
    by_status = {task["status"]: task for task in page if task["last_run"] or task["status"] != "active"}
    assert by_status["active"]["last_run"]["http_status"] == 503
    assert by_status["completed"]["last_run"]["at"] is None and by_status["completed"]["paused_reason"] is None
    assert by_status["paused"]["paused_reason"] == "paused by the tenant"
    assert by_status["completed"]["runs_scheduled"] == 2 and by_status["paused"]["runs_scheduled"] is None


@pytest.mark.django_db
def test_times_render_in_the_current_zone_as_task_output_renders_them(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _varied_tasks()

    with timezone.override("Europe/Madrid"):
        page = task_page_json(_page())
        expected = _drf_rendering(monkeypatch, tasks)

    assert page == expected
    assert page[0]["created_at"].endswith(("+01:00", "+02:00"))


def test_every_field_of_task_output_is_written_in_its_order() -> None:
    """A field added to TaskOutput (or its nested outputs) fails here until page_json writes it."""
    task = Task(
        id=uuid.uuid4(),
        name="n",
        status=TaskStatus.ACTIVE,
        version=1,
        cron_expression="* * * * *",
        timezone="UTC",
        http_url="https://example.com/",
        http_method="POST",
        last_run_job_id=uuid.uuid4(),
        last_run_status="succeeded",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )

    (page,) = task_page_json([task])

    assert list(page) == list(TaskOutput().fields)
    assert list(page["http"]) == list(HttpOutput().fields)
    assert list(page["last_run"]) == list(LastRunOutput().fields)
