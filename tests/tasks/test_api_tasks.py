"""The task API end to end on real MariaDB: every verb, status code and header it promises."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings
from django.urls import reverse

from tasks import targets
from tasks.models import Task, TaskStatus
from tests.factories import make_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
PROBLEM = "application/problem+json"


def body(**overrides):
    data = {
        "name": "nightly report",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"},
        "http": {"url": "https://example.com/hook", "method": "POST", "headers": {"X-Token-Ref": "a"}, "body": "{}"},
    }
    data.update(overrides)
    return data


@pytest.fixture
def created(owner):
    response = owner.post(TASKS, body(), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    problem = response.json()
    assert problem["status"] == status
    assert {"type", "title", "detail"} <= problem.keys()
    return problem


# --- create -----------------------------------------------------------------------


def test_create_answers_201_with_the_task_in_the_documented_shape(owner):
    owner.put("/v1/secrets/hooks-report", {"value": "Bearer report-token"}, format="json")
    response = owner.post(TASKS, body(priority=2, secret_ref="hooks-report"), format="json")
    assert response.status_code == 201
    task = response.json()
    assert set(task) == {
        "id", "name", "status", "version", "schedule", "http", "timeout_seconds", "max_attempts",
        "backoff_base_seconds", "priority", "secret_ref", "next_run_at", "created_at", "updated_at",
        "missed_runs", "auto_pause_after", "paused_reason", "consecutive_failures", "last_run", "labels",
        "overlap", "delete_after_completion", "runs_scheduled",
    }  # fmt: skip
    assert (task["missed_runs"], task["auto_pause_after"], task["paused_reason"]) == ("all", None, None)
    assert (task["consecutive_failures"], task["last_run"]) == (0, None)
    assert task["schedule"] == {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"}
    assert task["http"] == {
        "url": "https://example.com/hook",
        "method": "POST",
        "headers": {"X-Token-Ref": "a"},
        "body": "{}",
    }
    assert (task["status"], task["version"], task["priority"], task["secret_ref"]) == (
        "active",
        1,
        2,
        "hooks-report",
    )
    assert (task["timeout_seconds"], task["max_attempts"], task["backoff_base_seconds"]) == (30, 5, 10)
    assert response["ETag"] == '"1"'
    assert response["Location"] == reverse("task", args=[task["id"]]) == f"/v1/tasks/{task['id']}"
    assert owner.get(response["Location"]).json()["id"] == task["id"]
    assert task["next_run_at"].endswith("Z")
    next_run = datetime.fromisoformat(task["next_run_at"])
    assert next_run > datetime.now(UTC)
    assert next_run.astimezone(ZoneInfo("Europe/Madrid")).hour == 9


def test_a_created_tasks_location_keeps_the_script_prefix_the_api_is_served_under(owner):
    """Behind a proxy that mounts the API under a path (SCRIPT_NAME), Location is the task's URL there."""
    response = owner.post(TASKS, body(), format="json", SCRIPT_NAME="/jobsched")
    assert response.status_code == 201
    assert response["Location"] == f"/jobsched/v1/tasks/{response.json()['id']}"
    # A prefix with a space or beyond ASCII is quoted as reverse() quotes it.
    wsgi_text = "/job sched/é".encode().decode("latin-1")  # WSGI carries the path's UTF-8 bytes as latin-1
    spaced = owner.post(TASKS, body(), format="json", SCRIPT_NAME=wsgi_text)
    assert spaced["Location"] == f"/job%20sched/%C3%A9/v1/tasks/{spaced.json()['id']}"
    # An idempotent replay answers 200 with no Location, as before.
    first = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="loc-1")
    again = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="loc-1")
    assert (first.status_code, again.status_code) == (201, 200) and "Location" not in again


def test_create_defaults_the_zone_to_utc_and_the_method_to_post(owner):
    response = owner.post(
        TASKS, body(schedule={"cron": "@hourly"}, http={"url": "https://example.com/"}), format="json"
    )
    assert response.status_code == 201
    assert response.json()["schedule"] == {"cron": "@hourly", "timezone": "UTC"}
    assert response.json()["http"] == {"url": "https://example.com/", "method": "POST", "headers": {}, "body": ""}
    assert datetime.fromisoformat(response.json()["next_run_at"]).minute == 0


def test_a_one_shot_task_runs_at_its_run_at(owner):
    run_at = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    response = owner.post(TASKS, body(schedule={"run_at": run_at.isoformat()}), format="json")
    assert response.status_code == 201
    assert response.json()["schedule"] == {"run_at": run_at.isoformat().replace("+00:00", "Z")}
    assert datetime.fromisoformat(response.json()["next_run_at"]) == run_at


def test_create_with_a_body_that_is_not_json_is_400_or_415(owner):
    assert _problem(owner.post(TASKS, "{not json", content_type="application/json"), 400)
    assert _problem(owner.post(TASKS, "name=x", content_type="application/x-www-form-urlencoded"), 415)


def test_create_with_a_json_array_is_400(owner):
    _problem(owner.post(TASKS, [1, 2], format="json"), 400)


# --- idempotency ------------------------------------------------------------------


def test_same_idempotency_key_and_body_returns_the_original_task(owner):
    first = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert again["ETag"] == first["ETag"]
    assert Task.objects.count() == 1


def test_the_canonical_body_ignores_key_order_and_whitespace(owner):
    first = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    reordered = dict(reversed(list(body().items())))
    again = owner.post(TASKS, reordered, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]


def test_same_idempotency_key_with_another_body_is_422(owner):
    owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    problem = _problem(owner.post(TASKS, body(name="other"), format="json", HTTP_IDEMPOTENCY_KEY="k-1"), 422)
    assert "Idempotency-Key" in problem["errors"]
    assert Task.objects.count() == 1


def test_a_replay_answers_the_original_task_even_if_its_url_is_now_refused(owner, monkeypatch):
    first = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    monkeypatch.setattr(targets, "resolver", lambda host, port: ["10.0.0.1"])  # DNS changed since
    assert owner.post(TASKS, body(name="x"), format="json").status_code == 400
    again = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])


def test_a_request_that_fails_validation_does_not_bind_the_key(owner):
    bad = owner.post(TASKS, body(priority=42), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert _problem(bad, 400)["errors"] == {"priority": ["Ensure this value is less than or equal to 9."]}
    good = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert good.status_code == 201


def test_idempotency_keys_are_per_tenant(owner, other_tenant):
    a = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    b = other_tenant.post(TASKS, body(name="b"), format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert (a.status_code, b.status_code) == (201, 201)
    assert a.json()["id"] != b.json()["id"]


def test_idempotency_keys_differing_in_case_are_different_keys(owner):
    first = owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="Key-A")
    second = owner.post(TASKS, body(name="other"), format="json", HTTP_IDEMPOTENCY_KEY="key-a")
    assert (first.status_code, second.status_code) == (201, 201)


@pytest.mark.parametrize("key", ["", "x" * 256, "a\tb", "caf\u00e9", " leading", "trailing ", "a\x7fb"])
def test_a_bad_idempotency_key_is_400(owner, key):
    problem = _problem(owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY=key), 400)
    assert "Idempotency-Key" in problem["errors"]
    assert not Task.objects.exists()


def test_a_255_character_idempotency_key_is_accepted(owner):
    assert owner.post(TASKS, body(), format="json", HTTP_IDEMPOTENCY_KEY="k" * 255).status_code == 201


# --- list -------------------------------------------------------------------------


def test_list_pages_newest_first_with_a_cursor(owner):
    ids = [owner.post(TASKS, body(name=f"t{i}"), format="json").json()["id"] for i in range(5)]
    first = owner.get(TASKS, {"limit": 2}).json()
    assert [t["id"] for t in first["results"]] == ids[::-1][:2]
    second = owner.get(TASKS, {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [t["id"] for t in second["results"]] == ids[::-1][2:4]
    third = owner.get(TASKS, {"limit": 2, "cursor": second["next_cursor"]}).json()
    assert [t["id"] for t in third["results"]] == ids[:1]
    assert third["next_cursor"] is None


def test_list_shows_only_the_tenants_live_tasks(owner, other_tenant, created):
    other_tenant.post(TASKS, body(name="b"), format="json")
    doomed = owner.post(TASKS, body(name="doomed"), format="json").json()
    assert owner.delete(f"{TASKS}/{doomed['id']}").status_code == 204
    assert [t["id"] for t in owner.get(TASKS).json()["results"]] == [created["id"]]


def test_a_page_is_the_tasks_each_as_its_own_answer_in_utc_or_another_zone(owner):
    ids = [owner.post(TASKS, body(name=f"t{i}"), format="json").json()["id"] for i in range(3)]
    singles = [owner.get(f"{TASKS}/{task_id}").json() for task_id in reversed(ids)]

    assert owner.get(TASKS).json() == {"results": singles, "next_cursor": None}
    assert owner.get(TASKS, HTTP_ACCEPT="application/json; indent=2").json()["results"] == singles
    with override_settings(TIME_ZONE="Europe/Madrid"):
        in_madrid = owner.get(TASKS).json()["results"]
    assert [task["id"] for task in in_madrid] == [task["id"] for task in singles]
    assert in_madrid[0]["created_at"].endswith(("+01:00", "+02:00")) and singles[0]["created_at"].endswith("Z")
    assert datetime.fromisoformat(in_madrid[0]["created_at"]) == datetime.fromisoformat(singles[0]["created_at"])


def test_a_page_the_database_wrote_a_task_of_as_null_is_rendered_by_task_json(owner, monkeypatch):
    from tasks import selectors

    ids = [owner.post(TASKS, body(name=f"t{i}"), format="json").json()["id"] for i in range(2)]
    monkeypatch.setattr(selectors, "_JSON_COLUMNS", "t.id, NULL")

    assert [task["id"] for task in owner.get(TASKS).json()["results"]] == ids[::-1]


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 201}, {"limit": "x"}, {"limit": -1}, {"cursor": "nope"}])
def test_list_with_a_bad_limit_or_cursor_is_400(owner, query):
    _problem(owner.get(TASKS, query), 400)


def test_list_limit_defaults_to_50_and_caps_at_200(owner):
    make_tasks(51, tenant_id=owner.tenant_id)
    default = owner.get(TASKS).json()
    assert (len(default["results"]), default["next_cursor"] is not None) == (50, True)
    everything = owner.get(TASKS, {"limit": 200}).json()
    assert (len(everything["results"]), everything["next_cursor"]) == (51, None)
    _problem(owner.get(TASKS, {"limit": 201}), 400)


# --- get --------------------------------------------------------------------------


def test_get_returns_the_task_with_its_etag(owner, created):
    response = owner.get(f"{TASKS}/{created['id']}")
    assert response.status_code == 200
    assert response.json() == created
    assert response["ETag"] == '"1"'


@pytest.mark.parametrize("task_id", ["not-a-uuid", "00000000-0000-7000-8000-000000000000"])
def test_get_of_an_unknown_or_malformed_id_is_404(owner, task_id):
    _problem(owner.get(f"{TASKS}/{task_id}"), 404)


# --- patch ------------------------------------------------------------------------


def test_patch_with_the_current_etag_edits_and_bumps_the_version(owner, created):
    url = f"{TASKS}/{created['id']}"
    response = owner.patch(url, {"name": "renamed", "priority": 0}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["priority"], response.json()["version"]) == ("renamed", 0, 2)
    assert response["ETag"] == '"2"'
    assert owner.get(url).json()["name"] == "renamed"


def test_patch_without_if_match_is_428(owner, created):
    _problem(owner.patch(f"{TASKS}/{created['id']}", {"name": "x"}, format="json"), 428)
    _problem(owner.patch(f"{TASKS}/{created['id']}", {"name": "x"}, format="json", HTTP_IF_MATCH="*"), 428)
    assert Task.objects.get().version == 1


@pytest.mark.parametrize("if_match", ['"2"', 'W/"1"', "1", '"one"', '"0", "2"'])
def test_patch_with_a_stale_weak_or_malformed_etag_is_412(owner, created, if_match):
    problem = _problem(
        owner.patch(f"{TASKS}/{created['id']}", {"name": "x"}, format="json", HTTP_IF_MATCH=if_match), 412
    )
    assert problem["current_etag"] == '"1"'
    assert Task.objects.get().name == "nightly report"


def test_patch_accepts_a_list_of_etags_containing_the_current_one(owner, created):
    response = owner.patch(f"{TASKS}/{created['id']}", {"name": "x"}, format="json", HTTP_IF_MATCH='"7", "1"')
    assert response.status_code == 200


def test_404_wins_over_428_and_412(owner, other_tenant, created):
    missing = f"{TASKS}/00000000-0000-7000-8000-000000000000"
    _problem(owner.patch(missing, {"name": "x"}, format="json"), 404)
    _problem(owner.patch(missing, {"name": "x"}, format="json", HTTP_IF_MATCH='"9"'), 404)
    _problem(other_tenant.patch(f"{TASKS}/{created['id']}", {"name": "x"}, format="json"), 404)


def test_an_edit_that_does_not_touch_the_schedule_never_touches_next_run_at(owner, created):
    Task.objects.filter(pk=created["id"]).update(next_run_at=datetime(2030, 1, 1, tzinfo=UTC))  # the scheduler's
    response = owner.patch(
        f"{TASKS}/{created['id']}",
        {"http": {"url": "https://api.example.org/other"}, "timeout_seconds": 60},
        format="json",
        HTTP_IF_MATCH='"1"',
    )
    assert response.status_code == 200
    assert response.json()["next_run_at"] == "2030-01-01T00:00:00Z"
    assert response.json()["http"]["headers"] == {"X-Token-Ref": "a"}  # http merges key by key


def test_an_edit_of_the_schedule_recomputes_next_run_at(owner, created):
    response = owner.patch(
        f"{TASKS}/{created['id']}",
        {"schedule": {"cron": "30 14 * * *", "timezone": "America/New_York"}},
        format="json",
        HTTP_IF_MATCH='"1"',
    )
    assert response.status_code == 200
    next_run = datetime.fromisoformat(response.json()["next_run_at"])
    local = next_run.astimezone(ZoneInfo("America/New_York"))
    assert (local.hour, local.minute) == (14, 30)
    assert next_run > datetime.now(UTC)


def test_an_edit_of_the_zone_alone_recomputes_next_run_at(owner, created):
    before = created["next_run_at"]
    response = owner.patch(
        f"{TASKS}/{created['id']}",
        {"schedule": {"cron": "0 9 * * 1-5", "timezone": "Asia/Tokyo"}},
        format="json",
        HTTP_IF_MATCH='"1"',
    )
    assert response.json()["next_run_at"] != before
    assert datetime.fromisoformat(response.json()["next_run_at"]).hour == 0  # 09:00 JST


def test_an_edit_that_changes_nothing_keeps_the_version(owner, created):
    response = owner.patch(f"{TASKS}/{created['id']}", {"name": created["name"]}, format="json", HTTP_IF_MATCH='"1"')
    assert (response.status_code, response.json()["version"]) == (200, 1)


def test_an_invalid_edit_is_400_and_changes_nothing(owner, created):
    response = owner.patch(
        f"{TASKS}/{created['id']}", {"http": {"url": "http://10.0.0.1/"}}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert "http.url" in _problem(response, 400)["errors"]
    assert Task.objects.get().version == 1


def test_an_edit_of_a_one_shot_that_already_passed_keeps_its_run_at(owner):
    created = owner.post(TASKS, body(schedule={"run_at": "2031-01-01T00:00:00Z"}), format="json").json()
    Task.objects.filter(pk=created["id"]).update(run_at=datetime(2020, 1, 1, tzinfo=UTC), next_run_at=None)
    response = owner.patch(f"{TASKS}/{created['id']}", {"name": "y"}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 200, response.content
    assert response.json()["next_run_at"] is None


# --- pause, resume, delete --------------------------------------------------------


def test_pause_and_resume_bump_the_version_and_resume_moves_to_the_next_future_run(owner, created):
    url = f"{TASKS}/{created['id']}"
    paused = owner.post(f"{url}/pause")
    assert (paused.status_code, paused.json()["status"], paused.json()["version"]) == (200, "paused", 2)
    assert paused["ETag"] == '"2"'
    Task.objects.filter(pk=created["id"]).update(next_run_at=datetime(2020, 1, 1, tzinfo=UTC))  # missed runs
    resumed = owner.post(f"{url}/resume")
    assert (resumed.status_code, resumed.json()["status"], resumed.json()["version"]) == (200, "active", 3)
    assert datetime.fromisoformat(resumed.json()["next_run_at"]) > datetime.now(UTC)


def test_pausing_a_paused_task_and_resuming_an_active_one_change_nothing(owner, created):
    url = f"{TASKS}/{created['id']}"
    assert owner.post(f"{url}/resume").json()["version"] == 1
    owner.post(f"{url}/pause")
    assert owner.post(f"{url}/pause").json()["version"] == 2


def test_delete_is_204_and_the_task_is_then_404_for_every_verb(owner, created):
    url = f"{TASKS}/{created['id']}"
    response = owner.delete(url)
    assert response.status_code == 204
    assert response.content == b""
    assert Task.objects.get().status == TaskStatus.DELETED
    assert Task.objects.get().deleted_at is not None
    _problem(owner.get(url), 404)
    _problem(owner.patch(url, {"name": "x"}, format="json", HTTP_IF_MATCH='"2"'), 404)
    _problem(owner.post(f"{url}/pause"), 404)
    _problem(owner.post(f"{url}/resume"), 404)
    _problem(owner.delete(url), 404)


def test_delete_honours_an_if_match_when_given(owner, created):
    _problem(owner.delete(f"{TASKS}/{created['id']}", HTTP_IF_MATCH='"5"'), 412)
    assert owner.delete(f"{TASKS}/{created['id']}", HTTP_IF_MATCH='"1"').status_code == 204


def test_another_tenants_task_is_404_for_every_verb(other_tenant, created):
    url = f"{TASKS}/{created['id']}"
    _problem(other_tenant.get(url), 404)
    _problem(other_tenant.patch(url, {"name": "x"}, format="json", HTTP_IF_MATCH='"1"'), 404)
    _problem(other_tenant.post(f"{url}/pause"), 404)
    _problem(other_tenant.post(f"{url}/resume"), 404)
    _problem(other_tenant.delete(url), 404)
    assert other_tenant.get(TASKS).json()["results"] == []
    task = Task.objects.get()
    assert (task.status, task.version, task.name) == ("active", 1, "nightly report")


def test_a_method_the_route_does_not_have_is_405_problem_json(owner, created):
    _problem(owner.put(f"{TASKS}/{created['id']}", body(), format="json"), 405)
    _problem(owner.get(f"{TASKS}/{created['id']}/pause"), 405)


def test_an_unknown_path_is_404_problem_json(owner):
    _problem(owner.get("/v1/nothing-here"), 404)


# --- throttling and schema ---------------------------------------------------------


def test_a_tenant_over_its_rate_gets_429_with_retry_after_and_others_do_not(owner, other_tenant):
    with override_settings(TENANT_THROTTLE_RATE="3/minute"):
        assert [owner.get(TASKS).status_code for _ in range(3)] == [200, 200, 200]
        problem = _problem(owner.get(TASKS), 429)
        assert problem["type"].endswith("/too-many-requests")
        assert 0 < int(owner.get(TASKS)["Retry-After"]) <= 60
        assert other_tenant.get(TASKS).status_code == 200


def test_throttling_is_off_when_the_rate_is_empty(owner):
    with override_settings(TENANT_THROTTLE_RATE=""):
        assert {owner.get(TASKS).status_code for _ in range(20)} == {200}


def test_the_openapi_schema_is_served_without_a_token(stranger):
    response = stranger.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert {"/v1/tasks", "/v1/tasks/{task_id}", "/v1/tasks/{task_id}/pause", "/v1/tasks/{task_id}/resume"} <= set(
        schema["paths"]
    )
    assert set(schema["paths"]["/v1/tasks/{task_id}"]) >= {"get", "patch", "delete"}
