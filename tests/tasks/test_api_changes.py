"""A task's audit trail through the API: every change recorded with who, when, old and new (secrets masked)."""

from __future__ import annotations

import pytest

from domain.masking import MASK
from tasks.models import TaskChange
from tests.tenants import OTHER_TENANT, OWNER, TenantClient

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"


def body(**overrides):
    data = {
        "name": "nightly report",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"},
        "http": {
            "url": "https://example.com/hook?api_key=k-123456&page=1",
            "method": "POST",
            "headers": {"X-Api-Key": "hdr-secret-1", "X-Team": "billing"},
            "body": '{"kind": "daily", "password": "body-secret-1"}',
        },
    }
    data.update(overrides)
    return data


@pytest.fixture
def alice(make_token) -> TenantClient:
    """The owner tenant, its token naming a subject (an IdP's user)."""
    return TenantClient(OWNER, make_token(OWNER, sub="alice@example.com"))


def changes_of(client, task_id, **query):
    response = client.get(f"{TASKS}/{task_id}/changes", query)
    assert response.status_code == 200, response.content
    return response.json()


def by_field(change):
    return {entry["field"]: entry for entry in change["changes"]}


def test_a_create_is_recorded_with_its_actor_and_every_field_new(alice):
    task = alice.post(TASKS, body(labels={"env": "prod"}), format="json").json()

    [created] = changes_of(alice, task["id"])["results"]

    assert (created["action"], created["actor"], created["task_id"], created["version"]) == (
        "create",
        "token:alice@example.com",
        task["id"],
        1,
    )
    assert created["at"].endswith("Z")
    fields = by_field(created)
    assert fields["name"] == {
        "field": "name",
        "old": None,
        "new": "nightly report",
        "masked": False,
        "truncated": False,
    }
    assert fields["schedule"]["new"] == {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"}
    assert fields["labels.env"]["new"] == "prod"
    assert fields["http.headers.X-Team"]["new"] == "billing"
    assert {"paused_reason", "secret_ref", "auto_pause_after"}.isdisjoint(fields)  # unset ones are left out


def test_a_token_without_a_subject_is_recorded_as_its_tenant(owner):
    task = owner.post(TASKS, body(), format="json").json()

    assert changes_of(owner, task["id"])["results"][0]["actor"] == f"tenant:{OWNER}"


def test_an_edit_records_only_the_changed_fields_old_and_new(alice):
    task = alice.post(TASKS, body(), format="json").json()

    response = alice.patch(
        f"{TASKS}/{task['id']}",
        {"name": "morning report", "max_attempts": 3, "schedule": {"cron": "30 8 * * 1-5", "timezone": "UTC"}},
        format="json",
        HTTP_IF_MATCH='"1"',
    )
    assert response.status_code == 200, response.content

    edit, create = changes_of(alice, task["id"])["results"]
    assert (edit["action"], edit["actor"], edit["version"], create["action"]) == (
        "update",
        "token:alice@example.com",
        2,
        "create",
    )
    fields = by_field(edit)
    assert set(fields) == {"name", "max_attempts", "schedule"}
    assert (fields["name"]["old"], fields["name"]["new"]) == ("nightly report", "morning report")
    assert (fields["max_attempts"]["old"], fields["max_attempts"]["new"]) == (5, 3)
    assert fields["schedule"]["old"] == {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"}
    assert fields["schedule"]["new"] == {"cron": "30 8 * * 1-5", "timezone": "UTC"}


def test_an_edit_that_changes_nothing_records_nothing(alice):
    task = alice.post(TASKS, body(), format="json").json()

    alice.patch(f"{TASKS}/{task['id']}", {"name": "nightly report"}, format="json", HTTP_IF_MATCH='"1"')

    assert [change["action"] for change in changes_of(alice, task["id"])["results"]] == ["create"]


def test_secret_values_are_never_recorded_only_that_they_changed(alice):
    task = alice.post(TASKS, body(), format="json").json()
    alice.patch(
        f"{TASKS}/{task['id']}",
        {
            "http": {
                "url": "https://example.com/hook?api_key=k-654321&page=1",
                "headers": {"X-Api-Key": "hdr-secret-2", "X-Team": "billing"},
                "body": '{"kind": "daily", "password": "body-secret-2"}',
            }
        },
        format="json",
        HTTP_IF_MATCH='"1"',
    )

    page = changes_of(alice, task["id"])
    text = str(page)
    for secret in ("k-123456", "k-654321", "hdr-secret-1", "hdr-secret-2", "body-secret-1", "body-secret-2"):
        assert secret not in text
    stored = str(list(TaskChange.objects.values_list("changes", flat=True)))
    assert "hdr-secret" not in stored and "body-secret" not in stored and "k-654321" not in stored
    fields = by_field(page["results"][0])
    assert set(fields) == {"http.headers.X-Api-Key", "http.url", "http.body"}
    assert fields["http.headers.X-Api-Key"] == {
        "field": "http.headers.X-Api-Key",
        "old": MASK,
        "new": MASK,
        "masked": True,
        "truncated": False,
    }
    assert fields["http.url"]["masked"] and MASK in fields["http.url"]["new"]
    assert fields["http.body"]["masked"] and MASK in fields["http.body"]["new"]


def test_a_huge_body_edit_is_stored_cut_to_the_bound(alice):
    task = alice.post(TASKS, body(http={"url": "https://example.com/hook", "body": "a" * 60_000}), format="json")
    task = task.json()
    alice.patch(f"{TASKS}/{task['id']}", {"http": {"body": "b" * 60_000}}, format="json", HTTP_IF_MATCH='"1"')

    entry = by_field(changes_of(alice, task["id"])["results"][0])["http.body"]

    assert entry["truncated"] is True
    assert entry["old"].startswith("aaa") and entry["new"].startswith("bbb")
    assert len(entry["old"]) <= 1025 and len(entry["new"]) <= 1025


def test_pause_resume_and_delete_are_recorded_newest_first(alice):
    task = alice.post(TASKS, body(), format="json").json()
    url = f"{TASKS}/{task['id']}"

    assert alice.post(f"{url}/pause").status_code == 200
    assert alice.post(f"{url}/resume").status_code == 200
    assert alice.delete(url).status_code == 204

    results = changes_of(alice, task["id"])["results"]
    assert [change["action"] for change in results] == ["delete", "resume", "pause", "create"]
    assert {change["actor"] for change in results} == {"token:alice@example.com"}
    delete, resume, pause, _ = (by_field(change) for change in results)
    assert (pause["status"]["old"], pause["status"]["new"]) == ("active", "paused")
    assert pause["paused_reason"]["new"] == "paused by the tenant"
    assert (resume["status"]["old"], resume["status"]["new"]) == ("paused", "active")
    assert (delete["status"]["old"], delete["status"]["new"]) == ("active", "deleted")
    assert alice.get(url).status_code == 404  # deleted: the task is gone, its changes stay readable


def test_a_pause_of_a_paused_task_records_nothing(alice):
    task = alice.post(TASKS, body(), format="json").json()
    alice.post(f"{TASKS}/{task['id']}/pause")
    alice.post(f"{TASKS}/{task['id']}/pause")

    assert [change["action"] for change in changes_of(alice, task["id"])["results"]] == ["pause", "create"]


def test_an_import_records_its_creates_and_edits(alice):
    kept = alice.post(TASKS, body(name="kept"), format="json").json()
    lines = "\n".join(
        [
            '{"name": "kept", "schedule": {"cron": "0 7 * * *", "timezone": "UTC"}, '
            '"http": {"url": "https://example.com/hook"}}',
            '{"name": "new one", "schedule": {"cron": "0 7 * * *"}, "http": {"url": "https://example.com/hook"}}',
        ]
    )
    response = alice.post(f"{TASKS}/import", lines, content_type="application/x-ndjson")
    assert response.status_code == 200, response.content

    edit = changes_of(alice, kept["id"])["results"][0]
    assert (edit["action"], edit["actor"]) == ("import", "token:alice@example.com")
    assert by_field(edit)["schedule"]["new"] == {"cron": "0 7 * * *", "timezone": "UTC"}
    created_id = next(line["id"] for line in response.json()["lines"] if line["name"] == "new one")
    created = changes_of(alice, created_id)["results"]
    assert [(change["action"], by_field(change)["name"]["new"]) for change in created] == [("import", "new one")]


def test_changes_are_paged_with_a_cursor(alice):
    task = alice.post(TASKS, body(), format="json").json()
    for _ in range(2):
        alice.post(f"{TASKS}/{task['id']}/pause")
        alice.post(f"{TASKS}/{task['id']}/resume")

    first = changes_of(alice, task["id"], limit=2)
    second = changes_of(alice, task["id"], limit=2, cursor=first["next_cursor"])
    third = changes_of(alice, task["id"], limit=2, cursor=second["next_cursor"])

    actions = [change["action"] for page in (first, second, third) for change in page["results"]]
    assert actions == ["resume", "pause", "resume", "pause", "create"]
    assert third["next_cursor"] is None
    ids = [change["id"] for page in (first, second, third) for change in page["results"]]
    assert ids == sorted(ids, reverse=True)


@pytest.mark.parametrize("query, field", [({"limit": "0"}, "limit"), ({"cursor": "nope"}, "cursor")])
def test_bad_page_parameters_are_a_400_naming_them(alice, query, field):
    task = alice.post(TASKS, body(), format="json").json()

    response = alice.get(f"{TASKS}/{task['id']}/changes", query)

    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_another_tenants_task_changes_are_a_404(alice, other_tenant, stranger):
    task = alice.post(TASKS, body(), format="json").json()
    theirs = other_tenant.post(TASKS, body(), format="json").json()

    assert other_tenant.get(f"{TASKS}/{task['id']}/changes").status_code == 404
    assert alice.get(f"{TASKS}/{theirs['id']}/changes").status_code == 404
    assert alice.get(f"{TASKS}/not-an-id/changes").status_code == 404
    assert stranger.get(f"{TASKS}/{task['id']}/changes").status_code == 401
    assert TaskChange.objects.filter(tenant_id=OTHER_TENANT).count() == 1


def test_an_edit_refused_by_validation_writes_no_record(alice):
    task = alice.post(TASKS, body(), format="json").json()

    response = alice.patch(
        f"{TASKS}/{task['id']}", {"name": "ok", "max_attempts": 0}, format="json", HTTP_IF_MATCH='"1"'
    )

    assert response.status_code == 400
    assert TaskChange.objects.filter(task_id=task["id"]).count() == 1  # the create only


def test_a_create_refused_by_the_active_task_limit_writes_no_record(alice):
    from django.test import override_settings

    with override_settings(TENANT_MAX_ACTIVE_TASKS=1):
        alice.post(TASKS, body(), format="json")
        response = alice.post(TASKS, body(name="second"), format="json")

    assert response.status_code == 409
    assert TaskChange.objects.count() == 1
