"""Tasks read as rows and written out render exactly what TaskOutput (DRF's fields) renders."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from tasks import selectors
from tasks.models import Task, TaskLabel, TaskStatus
from tasks.serializers import HttpOutput, LastRunOutput, TaskOutput
from tasks.task_json import task_json, task_page_json
from tests.factories import make_task, varied_tasks

TENANT = "tenant-page"


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
def test_the_page_renders_as_task_output_renders_it() -> None:
    tasks = varied_tasks(TENANT)

    page = task_page_json(_page())

    expected = TaskOutput(tasks, many=True).data
    assert page == expected
    assert [list(task) for task in page] == [list(task) for task in expected]  # the same key order too
    by_status = {task["status"]: task for task in page if task["last_run"] or task["status"] != "active"}
    assert by_status["active"]["last_run"]["http_status"] == 503
    assert by_status["completed"]["last_run"]["at"] is None and by_status["completed"]["paused_reason"] is None
    assert by_status["paused"]["paused_reason"] == "paused by the tenant"
    assert by_status["completed"]["runs_scheduled"] == 2 and by_status["paused"]["runs_scheduled"] is None


@pytest.mark.django_db
def test_times_render_in_the_current_zone_as_task_output_renders_them() -> None:
    tasks = varied_tasks(TENANT)

    with timezone.override("Europe/Madrid"):
        page = task_page_json(_page())
        single = [task_json(task) for task in tasks]
        expected = TaskOutput(tasks, many=True).data

    assert page == expected and single == expected
    assert page[0]["created_at"].endswith(("+01:00", "+02:00"))


@pytest.mark.django_db
def test_one_task_renders_as_task_output_renders_it_read_back_or_just_made() -> None:
    just_made = make_task(tenant_id=TENANT, status=TaskStatus.PAUSED, paused_reason="by hand", labels={"a": "b"})
    assert isinstance(just_made.status, TaskStatus)  # the instance a create answers with, not read back

    for task in [*varied_tasks(TENANT), just_made]:
        assert task_json(task) == TaskOutput(task).data
        assert list(task_json(task)) == list(TaskOutput(task).data)


def test_a_naive_time_takes_drfs_own_path() -> None:
    task = _unsaved_task(created_at=datetime(2030, 1, 2, 3, 4, 5))  # DRF makes it aware in the current zone

    with timezone.override("Europe/Madrid"):
        assert task_json(task)["created_at"] == TaskOutput(task).data["created_at"] == "2030-01-02T03:04:05+01:00"


def test_every_field_of_task_output_is_written_in_its_order() -> None:
    """A field added to TaskOutput (or its nested outputs) fails here until task_json writes it."""
    rendered = task_json(_unsaved_task(last_run_job_id=uuid.uuid4(), last_run_status="succeeded"))

    assert list(rendered) == list(TaskOutput().fields)
    assert list(rendered["http"]) == list(HttpOutput().fields)
    assert list(rendered["last_run"]) == list(LastRunOutput().fields)


def _unsaved_task(**fields: Any) -> Task:
    return Task(
        **{
            "id": uuid.uuid4(),
            "name": "n",
            "status": TaskStatus.ACTIVE,
            "version": 1,
            "cron_expression": "* * * * *",
            "timezone": "UTC",
            "http_url": "https://example.com/",
            "http_method": "POST",
            "created_at": timezone.now(),
            "updated_at": timezone.now(),
            **fields,
        }
    )


def _page_text(**kwargs: Any) -> tuple[list[dict[str, Any]], uuid.UUID | None]:
    text, next_id = selectors.task_page_text(tenant_id=TENANT, before=None, limit=50, **kwargs)
    return json.loads(text), next_id


@pytest.mark.django_db
def test_the_page_the_database_writes_renders_as_task_output_renders_it() -> None:
    tasks = varied_tasks(TENANT)

    page, next_id = _page_text()

    expected = TaskOutput(tasks, many=True).data
    assert next_id is None
    assert page == expected
    assert json.dumps(page) == json.dumps(expected)  # the same key order at every depth


@pytest.mark.django_db
def test_the_database_writes_any_text_and_every_interval_as_task_output_does() -> None:
    odd = 'quote " backslash \\ slash / tab \t newline \n nul-ish \x01 é 漢字 😀 \u2028 end'
    made = [
        make_task(
            tenant_id=TENANT,
            name=odd[:200],
            http_body=odd,
            http_headers={"X-Odd": odd, "X-Empty": ""},
            labels={"k": "v é"},
            secret_ref=odd[:255],
            exclude_calendars=[],
            window_seconds=0,
            last_run_job_id=uuid.uuid4(),
            last_run_scheduled_at=datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC),  # no microseconds
            last_run_status=None,
            last_run_http_status=200,
        ),
        *[
            make_task(tenant_id=TENANT, cron_expression=None, every_seconds=seconds, anchor=timezone.now())
            for seconds in (60, 3600, 86400, 86400 + 60, 366 * 86400, 90061)
        ],
    ]

    page, _ = _page_text()

    expected = TaskOutput(sorted(made, key=lambda task: task.pk, reverse=True), many=True).data
    assert json.dumps(page) == json.dumps(expected)
    assert [task["schedule"]["every"] for task in page[:6]] == ["1d1h1m", "366d", "1d1m", "1d", "1h", "1m"]
    assert page[-1]["name"] == odd[:200] and page[-1]["http"]["headers"]["X-Odd"] == odd


@pytest.mark.django_db
def test_a_calendar_list_stored_as_json_null_is_left_out_as_task_json_leaves_it() -> None:
    task = make_task(tenant_id=TENANT, exclude_calendars=["holidays"])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE tasks SET exclude_calendars = 'null' WHERE id = %s", [task.pk.bytes])

    page, _ = _page_text()

    assert "exclude_calendars" not in page[0]["schedule"]
    assert page == TaskOutput([Task.objects.get(pk=task.pk)], many=True).data


@pytest.mark.django_db
def test_a_task_the_database_writes_as_null_turns_the_page_to_task_json(monkeypatch, caplog) -> None:
    tasks = varied_tasks(TENANT)
    monkeypatch.setattr(selectors, "_JSON_COLUMNS", "t.id, IF(t.status = 'paused', NULL, '{}')")

    text, next_id = selectors.task_page_text(tenant_id=TENANT, before=None, limit=len(tasks) - 1)

    assert text is None and next_id == tasks[-2].pk  # one paused task among the others
    assert [record.event for record in caplog.records] == ["task_page_text_null"]


@pytest.mark.django_db
def test_the_database_pages_as_task_page_does_with_each_filter() -> None:
    tasks = varied_tasks(TENANT)
    for task in tasks:
        TaskLabel.objects.create(task_id=task.pk, tenant_id=TENANT, key="all", value="yes")
    TaskLabel.objects.create(task_id=tasks[1].pk, tenant_id=TENANT, key="one", value="yes")
    make_task(tenant_id="another-tenant")
    cases = [
        ({}, tasks),
        ({"labels": {"all": "yes"}}, tasks),
        ({"labels": {"all": "yes", "one": "yes"}}, [tasks[1]]),
        ({"status": TaskStatus.PAUSED}, [task for task in tasks if task.status == TaskStatus.PAUSED]),
    ]

    for filters, wanted in cases:
        before, written = None, []
        while True:
            text, next_id = selectors.task_page_text(tenant_id=TENANT, before=before, limit=2, **filters)
            rows, row_next = selectors.task_page(tenant_id=TENANT, before=before, limit=2, **filters)
            assert [task["id"] for task in json.loads(text)] == [str(row.id) for row in rows]
            assert next_id == row_next
            written += json.loads(text)
            if next_id is None:
                break
            before = next_id
        assert written == TaskOutput(wanted, many=True).data, filters


@pytest.mark.django_db
def test_the_utc_pages_most_asked_for_are_prepared_once_and_the_rest_sent_as_text() -> None:
    varied_tasks(TENANT)
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql.split(" ", 1)[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        for _ in range(2):
            selectors.task_page_text(tenant_id=TENANT, before=None, limit=50, labels={"env": "prod"})
        selectors.task_page_text(tenant_id=TENANT, before=None, limit=50, labels={"env": "prod", "team": ""})

    assert sent[-3:] == ["EXECUTE", "EXECUTE", "SELECT"]
    assert sent[:-3] in ([], ["PREPARE"])  # prepared by an earlier test on this connection, or now
