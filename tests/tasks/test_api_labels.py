"""Labels on tasks: set on create, merged by PATCH, shown, and the list filtered by `?label=key=value`."""

from __future__ import annotations

import pytest

from tasks.models import TaskLabel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"


def body(name="job", **overrides):
    data = {
        "name": name,
        "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
        "http": {"url": "https://example.com/hook"},
    }
    data.update(overrides)
    return data


def _create(client, name, labels):
    response = client.post(TASKS, body(name, labels=labels), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _names(response):
    assert response.status_code == 200, response.content
    return [task["name"] for task in response.json()["results"]]


def test_labels_are_stored_shown_and_default_to_none(owner):
    task = _create(owner, "a", {"team": "ops", "env": "prod", "example.com/tier": "1", "empty": ""})
    assert task["labels"] == {"empty": "", "env": "prod", "example.com/tier": "1", "team": "ops"}
    assert _create(owner, "b", {})["labels"] == {}
    assert owner.post(TASKS, body("c"), format="json").json()["labels"] == {}
    rows = set(TaskLabel.objects.filter(task_id=task["id"]).values_list("tenant_id", "key", "value"))
    assert {(key, value) for _, key, value in rows} == set(task["labels"].items())
    assert {tenant for tenant, _, _ in rows} == {"tenant-a"}


def test_a_patch_merges_labels_key_by_key_and_null_removes_one(owner):
    task = _create(owner, "a", {"env": "prod", "team": "ops"})
    response = owner.patch(
        f"{TASKS}/{task['id']}", {"labels": {"team": None, "tier": "gold"}}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert response.status_code == 200, response.content
    assert response.json()["labels"] == {"env": "prod", "tier": "gold"}
    assert response["ETag"] == '"2"'
    assert set(TaskLabel.objects.filter(task_id=task["id"]).values_list("key", "value")) == {
        ("env", "prod"),
        ("tier", "gold"),
    }
    # The same labels again change nothing: the version stays.
    same = owner.patch(f"{TASKS}/{task['id']}", {"labels": {"env": "prod"}}, format="json", HTTP_IF_MATCH='"2"')
    assert same["ETag"] == '"2"'


def test_the_list_is_filtered_by_every_selector_given(owner, other_tenant):
    _create(owner, "prod-ops", {"env": "prod", "team": "ops"})
    _create(owner, "prod-web", {"env": "prod", "team": "web"})
    _create(owner, "dev-ops", {"env": "dev", "team": "ops"})
    _create(other_tenant, "theirs", {"env": "prod", "team": "ops"})
    assert _names(owner.get(TASKS, {"label": "env=prod"})) == ["prod-web", "prod-ops"]
    assert _names(owner.get(f"{TASKS}?label=env=prod&label=team=ops")) == ["prod-ops"]
    assert _names(owner.get(TASKS, {"label": "env=staging"})) == []
    assert _names(other_tenant.get(TASKS, {"label": "team=ops"})) == ["theirs"]


def test_the_filtered_list_pages_by_cursor_and_forgets_deleted_tasks(owner):
    made = [_create(owner, f"t{i}", {"env": "prod"}) for i in range(5)]
    _create(owner, "other", {"env": "dev"})
    assert owner.delete(f"{TASKS}/{made[4]['id']}").status_code == 204
    first = owner.get(TASKS, {"label": "env=prod", "limit": 2}).json()
    assert [t["name"] for t in first["results"]] == ["t3", "t2"]
    second = owner.get(TASKS, {"label": "env=prod", "limit": 2, "cursor": first["next_cursor"]}).json()
    assert [t["name"] for t in second["results"]] == ["t1", "t0"]
    assert second["next_cursor"] is None


def test_an_edit_moves_a_task_in_and_out_of_a_filter(owner):
    task = _create(owner, "a", {"env": "dev"})
    owner.patch(f"{TASKS}/{task['id']}", {"labels": {"env": "prod"}}, format="json", HTTP_IF_MATCH='"1"')
    assert _names(owner.get(TASKS, {"label": "env=prod"})) == ["a"]
    assert _names(owner.get(TASKS, {"label": "env=dev"})) == []


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        ({"Env": "prod"}, "labels.Env"),  # keys are lower case
        ({"-env": "prod"}, "labels.-env"),
        ({"k" * 64: "v"}, "labels." + "k" * 64),
        ({"env": "a b"}, "labels.env"),
        ({"env": "v" * 64}, "labels.env"),
        ({"env": 7}, "labels.env"),
        ({"env": None}, "labels.env"),
        ({f"k{i}": "v" for i in range(17)}, "labels"),
        (["env=prod"], "labels"),
        ("env=prod", "labels"),
    ],
)
def test_a_bad_label_is_a_400_naming_it_and_nothing_is_written(owner, labels, field):
    response = owner.post(TASKS, body("bad", labels=labels), format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert field in response.json()["errors"], response.json()
    assert not TaskLabel.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        "label=env",
        "label=Env=prod",
        "label=env=a b",
        "label=env=prod&label=env=dev",
        "&".join(f"label=k{i}=v" for i in range(9)),
    ],
)
def test_a_bad_selector_is_a_400_naming_label(owner, query):
    response = owner.get(f"{TASKS}?{query}")
    assert response.status_code == 400, response.content
    assert "label" in response.json()["errors"]
