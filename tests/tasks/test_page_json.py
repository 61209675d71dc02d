"""The list's page read as rows and written out renders exactly what TaskOutput renders."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.utils import timezone
from rest_framework import serializers

from api.compiled_representation import CompiledRepresentation
from tasks import selectors
from tasks.models import Task, TaskStatus
from tasks.page_json import task_page_json
from tasks.serializers import HttpOutput, LastRunOutput, TaskOutput
from tests.factories import varied_tasks

TENANT = "tenant-page"


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
    tasks = varied_tasks(TENANT)

    rows = _page()

    assert [row.id for row in rows] == [task.pk for task in tasks]
    for row, task in zip(rows, tasks, strict=True):
        for field in Task._meta.concrete_fields:
            assert getattr(row, field.attname) == getattr(task, field.attname), field.attname
            assert type(getattr(row, field.attname)) is type(getattr(task, field.attname)), field.attname


@pytest.mark.django_db
def test_the_page_renders_as_task_output_renders_it(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = varied_tasks(TENANT)

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
    tasks = varied_tasks(TENANT)

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
