"""What Swagger UI and Redoc show a reader: each error status its own example, tasks first, real types."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from api.problems import PROBLEM_CONTENT_TYPE
from tasks import services

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return APIClient().get("/v1/schema?format=json").json()


def _error_examples(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            for code, response in operation["responses"].items():
                if int(code) >= 400:
                    yield f"{method.upper()} {path} {code}", int(code), response["content"][PROBLEM_CONTENT_TYPE]


def test_every_error_status_has_an_example_of_its_own(schema):
    seen = 0
    for where, code, content in _error_examples(schema):
        examples = content.get("examples")
        assert examples, f"{where}: no example"
        for example in examples.values():
            value = example["value"]
            assert value["status"] == code, f"{where}: example of status {value['status']}"
            assert value["detail"] != "http.url: destination not allowed" or code == 400, where
        seen += 1
    assert seen > 50


def test_error_examples_name_the_problem_type_of_their_status(schema):
    by_status: dict[int, set[str]] = {}
    for _, code, content in _error_examples(schema):
        for example in content["examples"].values():
            by_status.setdefault(code, set()).add(example["value"]["type"].rsplit("/", 1)[1])
    assert by_status[401] == {"unauthorized"}
    assert by_status[404] == {"not-found"}
    assert by_status[429] == {"too-many-requests"}
    assert "precondition-failed" in by_status[412]


def test_tasks_come_first_in_the_tag_order(schema):
    names = [tag["name"] for tag in schema["tags"]]
    assert names[0] == "tasks"
    used = {tag for methods in schema["paths"].values() for op in methods.values() for tag in op.get("tags", [])}
    assert used <= set(names)
    assert all(tag.get("description") for tag in schema["tags"])


def test_no_parameter_is_typed_string_or_string(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            for parameter in operation.get("parameters", []):
                text = json.dumps(parameter["schema"])
                assert "anyOf" not in text and "oneOf" not in text, f"{method} {path} {parameter['name']}"


def test_the_changes_page_shows_an_example_with_a_masked_header(schema):
    operation = schema["paths"]["/v1/tasks/{task_id}/changes"]["get"]
    [example] = operation["responses"]["200"]["content"]["application/json"]["examples"].values()
    [change] = example["value"]["results"]
    assert change["action"] == "update" and change["actor"].startswith("token:")
    assert {
        "field": "http.headers.X-Api-Key",
        "old": "••••••",
        "new": "••••••",
        "masked": True,
        "truncated": False,
    } in (change["changes"])
    schema_fields = schema["components"]["schemas"]["TaskChangeOutput"]["properties"]
    assert set(change) == set(schema_fields)


@pytest.mark.usefixtures("fake_dns")
def test_the_task_create_examples_show_the_schedule_options_and_the_api_accepts_each(schema, owner, monkeypatch):
    monkeypatch.setattr(
        services, "clock", lambda: datetime(2027, 1, 1, 12, 0, tzinfo=UTC)
    )  # before the examples' dates
    examples = schema["paths"]["/v1/tasks"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    values = [example["value"] for example in examples.values()]
    shown = {key for value in values for key in value["schedule"]} | {key for value in values for key in value}
    assert {"every", "anchor", "window_seconds", "starts_at", "ends_at", "max_runs"} <= shown
    assert {"overlap", "delete_after_completion"} <= shown
    for value in values:
        response = owner.post("/v1/tasks", value, format="json")
        assert response.status_code == 201, (value["name"], response.content)
