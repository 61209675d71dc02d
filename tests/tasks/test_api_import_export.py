"""Export a tenant's tasks as JSON lines and import them back: upsert by name, all or nothing, dry run."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from tasks.models import Task, TaskStatus

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
EXPORT = "/v1/tasks/export"
IMPORT = "/v1/tasks/import"
LINES = "application/x-ndjson"


def task(name, cron="0 9 * * *", **overrides):
    data = {
        "name": name,
        "schedule": {"cron": cron, "timezone": "Europe/Madrid"},
        "http": {"url": "https://example.com/hook", "method": "POST", "headers": {}, "body": ""},
    }
    data.update(overrides)
    return data


def lines(*tasks):
    return "\n".join(json.dumps(t) for t in tasks) + "\n"


def _import(client, text, **query):
    suffix = "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
    return client.post(IMPORT + suffix, text, content_type=LINES)


def _exported(client):
    response = client.get(EXPORT)
    assert response.status_code == 200
    assert response["Content-Type"] == LINES
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_export_writes_every_live_task_oldest_first_with_secrets_by_name(owner, other_tenant):
    owner.put("/v1/secrets/hook-token", {"value": "Bearer s3cret-value"}, format="json")
    first = owner.post(TASKS, task("first", secret_ref="hook-token", labels={"env": "prod"}), format="json").json()
    second = owner.post(TASKS, task("second"), format="json").json()
    gone = owner.post(TASKS, task("gone"), format="json").json()
    owner.delete(f"{TASKS}/{gone['id']}")
    other_tenant.post(TASKS, task("theirs"), format="json")
    exported = _exported(owner)
    assert [(line["id"], line["name"]) for line in exported] == [(first["id"], "first"), (second["id"], "second")]
    assert exported[0]["secret_ref"] == "hook-token" and exported[0]["labels"] == {"env": "prod"}
    assert exported[0]["status"] == "active"
    assert "s3cret-value" not in json.dumps(exported)


def test_import_creates_and_updates_by_name_and_the_same_lines_twice_change_nothing(owner):
    kept = owner.post(TASKS, task("kept", cron="0 8 * * *"), format="json").json()
    text = lines(task("kept", cron="30 8 * * *"), task("new", labels={"team": "ops"}))
    response = _import(owner, text)
    assert response.status_code == 200, response.content
    result = response.json()
    assert (result["dry_run"], result["created"], result["updated"], result["unchanged"]) == (False, 1, 1, 0)
    assert result["lines"][0] == {
        "line": 1,
        "name": "kept",
        "action": "update",
        "id": kept["id"],
        "fields": ["schedule"],
    }
    assert result["lines"][1]["action"] == "create" and result["lines"][1]["id"]
    stored = Task.objects.get(pk=kept["id"])
    assert (stored.cron_expression, stored.version) == ("30 8 * * *", 2)
    assert Task.objects.get(name="new").labels == {"team": "ops"}

    again = _import(owner, text).json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 2)
    assert Task.objects.get(pk=kept["id"]).version == 2


def test_an_export_imported_back_changes_nothing(owner):
    owner.post(TASKS, task("a", labels={"env": "dev"}), format="json")
    owner.post(TASKS, task("b", cron="*/5 * * * *"), format="json")
    text = "\n".join(json.dumps(line) for line in _exported(owner))
    result = _import(owner, text).json()
    assert (result["created"], result["updated"], result["unchanged"]) == (0, 0, 2)


def test_a_dry_run_answers_the_plan_and_writes_nothing(owner):
    owner.post(TASKS, task("kept"), format="json")
    result = _import(owner, lines(task("kept", max_attempts=9), task("new")), dry_run="true").json()
    assert result["dry_run"] is True
    assert [(line["action"], line["fields"]) for line in result["lines"]] == [
        ("update", ["max_attempts"]),
        ("create", []),
    ]
    assert result["lines"][1]["id"] is None
    assert Task.objects.count() == 1 and Task.objects.get().max_attempts == 5


def test_one_refused_line_refuses_the_whole_import_naming_each_line(owner):
    owner.post(TASKS, task("kept"), format="json")
    text = lines(task("fine"), task("bad-cron", cron="61 * * * *"), task("kept", http={"url": "http://10.0.0.1/x"}))
    response = _import(owner, text)
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    errors = response.json()["errors"]
    assert set(errors) == {"lines[2].schedule.cron", "lines[3].http.url"}, errors
    assert sorted(Task.objects.values_list("name", flat=True)) == ["kept"]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"name": "a"\n', "lines[1]"),  # not JSON
        ("[1, 2]\n", "lines[1]"),  # not an object
        (lines(task("twice"), task("twice")), "lines[2].name"),
        ("\n\n", "lines"),
        ("".join(json.dumps(task(f"t{i}")) + "\n" for i in range(201)), "lines"),
    ],
)
def test_bad_import_documents_are_a_400_naming_the_line(owner, text, field):
    response = _import(owner, text)
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"], response.json()
    assert not Task.objects.exists()


def test_a_name_two_live_tasks_share_is_refused(owner):
    owner.post(TASKS, task("dup"), format="json")
    owner.post(TASKS, task("dup"), format="json")
    response = _import(owner, lines(task("dup", max_attempts=2)))
    assert response.status_code == 400
    assert "lines[1].name" in response.json()["errors"]


def test_a_bad_dry_run_value_is_a_400(owner):
    response = _import(owner, lines(task("a")), dry_run="maybe")
    assert response.status_code == 400 and "dry_run" in response.json()["errors"]


def test_an_import_past_the_active_task_limit_writes_nothing(owner):
    with override_settings(TENANT_MAX_ACTIVE_TASKS=2):
        response = _import(owner, lines(task("a"), task("b"), task("c")))
    assert response.status_code == 409, response.content
    assert response.json()["type"].endswith("active-task-limit")
    assert not Task.objects.filter(status=TaskStatus.ACTIVE).exists()


def test_import_only_sees_its_own_tenants_tasks(owner, other_tenant):
    other_tenant.post(TASKS, task("shared-name"), format="json")
    result = _import(owner, lines(task("shared-name"))).json()
    assert result["created"] == 1
    assert Task.objects.filter(name="shared-name").count() == 2


def test_export_and_import_need_a_token(stranger):
    assert stranger.get(EXPORT).status_code == 401
    assert stranger.post(IMPORT, lines(task("a")), content_type=LINES).status_code == 401


def test_lines_are_numbered_as_tasks_blank_lines_not_counted(owner):
    text = "\n" + json.dumps(task("fine")) + "\n\n" + '{"name": "broken"\n'
    response = _import(owner, text)
    assert response.status_code == 400
    assert "lines[2]" in response.json()["errors"]  # the second task, on the file's fourth line


@pytest.mark.parametrize("path", [EXPORT, IMPORT])
def test_a_task_routes_verb_they_do_not_take_is_a_404_as_for_any_malformed_task_id(owner, path):
    for method in ("get", "patch", "delete"):
        if (method, path) == ("get", EXPORT):
            continue
        response = getattr(owner, method)(path)
        assert response.status_code == 404, (method, response.content)
        assert response["Content-Type"] == "application/problem+json"
        assert response.json() == owner.get(f"{TASKS}/not-an-id").json()
    assert owner.put(path).status_code == 405  # no verb of the task route
    assert (owner.post(EXPORT).status_code, APIClient().delete(path).status_code) == (405, 401)
