"""/v1/calendars: create or replace, read, list, delete; bounds; tenant isolation; tasks' exclude_calendars."""

from __future__ import annotations

import json

import pytest

from tasks.calendars import rules
from tasks.calendars.models import Calendar, CalendarSpan, TaskCalendar
from tasks.models import Task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

PROBLEM = "application/problem+json"
HOLIDAYS = {
    "timezone": "Europe/Madrid",
    "dates": ["2027-12-25", "2027-01-01"],
    "ranges": [{"from": "2027-08-09", "to": "2027-08-13"}],
}


def task_body(**schedule):
    return {
        "name": "weekday report",
        "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Madrid", **schedule},
        "http": {"url": "https://example.com/hook"},
    }


def problem(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    return response.json()


def put(client, name, body=None, **headers):
    return client.put(f"/v1/calendars/{name}", HOLIDAYS if body is None else body, format="json", **headers)


def test_put_creates_then_replaces_and_get_answers_it_with_its_etag(owner):
    created = put(owner, "es-holidays")
    assert created.status_code == 201, created.content
    assert created["Location"] == "/v1/calendars/es-holidays"
    assert created["ETag"] == '"1"'
    assert created.json() | {"created_at": None, "updated_at": None} == {
        "name": "es-holidays",
        "timezone": "Europe/Madrid",
        "dates": ["2027-01-01", "2027-12-25"],
        "ranges": [{"from": "2027-08-09", "to": "2027-08-13"}],
        "version": 1,
        "created_at": None,
        "updated_at": None,
    }
    same = put(owner, "es-holidays")
    assert (same.status_code, same["ETag"]) == (200, '"1"')  # nothing changed: the ETag stays
    replaced = put(owner, "es-holidays", {"timezone": "UTC", "dates": ["2028-01-01"]})
    assert (replaced.status_code, replaced["ETag"]) == (200, '"2"')
    got = owner.get("/v1/calendars/es-holidays")
    assert got.status_code == 200
    assert (got.json()["timezone"], got.json()["dates"], got.json()["ranges"]) == ("UTC", ["2028-01-01"], [])
    # The spans follow the replace: one day in UTC.
    assert CalendarSpan.objects.filter(calendar__name="es-holidays").count() == 1


def test_if_match_guards_a_replace_and_a_delete(owner):
    put(owner, "hols")
    stale = problem(put(owner, "hols", HTTP_IF_MATCH='"7"'), 412)
    assert stale["current_etag"] == '"1"'
    assert put(owner, "hols", {"timezone": "UTC"}, HTTP_IF_MATCH='"1"').status_code == 200
    problem(owner.delete("/v1/calendars/hols", HTTP_IF_MATCH='"1"'), 412)
    assert owner.delete("/v1/calendars/hols", HTTP_IF_MATCH='"2"').status_code == 204
    problem(put(owner, "new-one", HTTP_IF_MATCH='"1"'), 412)  # If-Match on nothing matches nothing
    assert not Calendar.objects.filter(name="new-one").exists()


def test_list_pages_by_name_with_a_cursor(owner):
    for name in ["c", "a", "b"]:
        put(owner, name)
    first = owner.get("/v1/calendars?limit=2").json()
    assert [c["name"] for c in first["results"]] == ["a", "b"]
    second = owner.get(f"/v1/calendars?limit=2&cursor={first['next_cursor']}").json()
    assert ([c["name"] for c in second["results"]], second["next_cursor"]) == (["c"], None)
    problem(owner.get("/v1/calendars?cursor=NOT%20A%20NAME"), 400)


def test_another_tenants_calendar_is_404_and_never_listed(owner, other_tenant):
    put(owner, "mine")
    problem(other_tenant.get("/v1/calendars/mine"), 404)
    problem(other_tenant.delete("/v1/calendars/mine"), 404)
    assert other_tenant.get("/v1/calendars").json()["results"] == []
    # Its own calendar of the same name is another calendar.
    assert put(other_tenant, "mine", {"timezone": "UTC", "dates": []}).status_code == 201
    assert owner.get("/v1/calendars/mine").json()["timezone"] == "Europe/Madrid"
    # Nor can a task name another tenant's calendar.
    refused = problem(other_tenant.post("/v1/tasks", task_body(exclude_calendars=["x", "mine"]), format="json"), 400)
    assert "schedule.exclude_calendars[0]" in refused["errors"]


def test_a_missing_calendar_is_404_and_a_stranger_401(owner, stranger):
    problem(owner.get("/v1/calendars/none"), 404)
    problem(owner.get("/v1/calendars/BAD"), 404)
    problem(owner.delete("/v1/calendars/none"), 404)
    assert stranger.get("/v1/calendars").status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"dates": []}, "timezone"),
        ({"timezone": "Mars/Olympus", "dates": []}, "timezone"),
        ({"timezone": "UTC", "dates": ["2027-01-01", "2027-01-02", "2027-01-03", "2027-02-30"]}, "dates[3]"),
        ({"timezone": "UTC", "dates": "2027-01-01"}, "dates"),
        (
            {"timezone": "UTC", "ranges": [{"from": "2027-01-01", "to": "2027-01-02"}, {"from": "2027-01-01"}]},
            "ranges[1].to",
        ),
        ({"timezone": "UTC", "ranges": [{"from": "2027-01-02", "to": "2027-01-01"}]}, "ranges[0].to"),
        ({"timezone": "UTC", "ranges": [{"from": "2027-01-01", "to": "2028-01-02"}]}, "ranges[0].to"),
        ({"timezone": "UTC", "ranges": [{"from": "2027-01-01", "to": "x"}]}, "ranges[0].to"),
        ({"timezone": "UTC", "ranges": [{"from": "2027-01-01", "to": "2027-01-01", "by": 1}]}, "ranges[0].by"),
        ({"timezone": "UTC", "ranges": ["2027-01-01"]}, "ranges[0]"),
        ({"timezone": "UTC", "holidays": []}, "holidays"),
        ({"timezone": "UTC", "dates": ["2027-01-01"] * (rules.MAX_ENTRIES + 1)}, "dates"),
        (
            {
                "timezone": "UTC",
                "dates": ["2027-01-01"] * 600,
                "ranges": [{"from": "2027-01-01", "to": "2027-01-01"}] * 401,
            },
            "ranges",
        ),
    ],
)
def test_each_bad_input_is_a_400_naming_its_field(owner, body, field):
    refused = problem(put(owner, "cal", body), 400)
    assert field in refused["errors"], refused
    assert not Calendar.objects.exists()


def test_a_bad_name_is_a_400_naming_it(owner):
    refused = problem(put(owner, "Not_OK"), 400)
    assert "name" in refused["errors"]


def test_a_tenant_holds_a_bounded_number_of_calendars(owner, monkeypatch):
    monkeypatch.setattr(rules, "MAX_CALENDARS_PER_TENANT", 2)
    put(owner, "a")
    put(owner, "b")
    refused = problem(put(owner, "c"), 409)
    assert refused["type"].endswith("too-many-calendars")
    assert put(owner, "a", {"timezone": "UTC"}).status_code == 200  # a replace is no new calendar


def test_a_task_excludes_calendars_and_shows_them_in_its_schedule(owner):
    put(owner, "hols")
    put(owner, "summer", {"timezone": "UTC", "ranges": [{"from": "2027-08-01", "to": "2027-08-31"}]})
    created = owner.post("/v1/tasks", task_body(exclude_calendars=["summer", "hols"]), format="json")
    assert created.status_code == 201, created.content
    task = created.json()
    assert task["schedule"]["exclude_calendars"] == ["summer", "hols"]
    rows = TaskCalendar.objects.filter(task_id=task["id"]).order_by("position")
    assert [row.calendar_name for row in rows] == ["summer", "hols"]
    # A PATCH of the schedule without them drops them (the schedule replaces whole); the rows follow.
    patched = owner.patch(
        f"/v1/tasks/{task['id']}",
        {"schedule": {"cron": "0 9 * * *", "timezone": "Europe/Madrid", "exclude_calendars": ["hols"]}},
        format="json",
        HTTP_IF_MATCH=created["ETag"],
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["schedule"]["exclude_calendars"] == ["hols"]
    assert patched.json()["next_run_at"] == task["next_run_at"]  # not a change of when it fires
    assert list(TaskCalendar.objects.filter(task_id=task["id"]).values_list("calendar_name", flat=True)) == ["hols"]
    # A task without calendars shows none, as before.
    plain = owner.post("/v1/tasks", task_body(), format="json").json()
    assert "exclude_calendars" not in plain["schedule"]


@pytest.mark.parametrize(
    ("names", "field"),
    [
        (["nope"], "schedule.exclude_calendars[0]"),
        (["hols", "BAD NAME"], "schedule.exclude_calendars[1]"),
        (["hols", "hols"], "schedule.exclude_calendars[1]"),
        ("hols", "schedule.exclude_calendars"),
        ([f"c{n}" for n in range(rules.MAX_EXCLUDE_CALENDARS + 1)], "schedule.exclude_calendars"),
    ],
)
def test_a_bad_exclude_calendars_is_a_400_naming_the_entry(owner, names, field):
    put(owner, "hols")
    refused = problem(owner.post("/v1/tasks", task_body(exclude_calendars=names), format="json"), 400)
    assert field in refused["errors"], refused


def test_a_calendar_a_task_excludes_cannot_be_deleted_until_no_live_task_does(owner):
    put(owner, "hols")
    first = owner.post("/v1/tasks", task_body(exclude_calendars=["hols"]), format="json").json()
    second = owner.post("/v1/tasks", task_body(exclude_calendars=["hols"]), format="json").json()
    owner.post(f"/v1/tasks/{second['id']}/pause")  # a paused task still excludes it
    refused = problem(owner.delete("/v1/calendars/hols"), 409)
    assert refused["tasks"] == 2 and "2 task(s)" in refused["detail"]
    owner.delete(f"/v1/tasks/{first['id']}")
    assert problem(owner.delete("/v1/calendars/hols"), 409)["tasks"] == 1
    owner.delete(f"/v1/tasks/{second['id']}")
    assert owner.delete("/v1/calendars/hols").status_code == 204
    assert not CalendarSpan.objects.exists()


def test_export_carries_exclude_calendars_and_import_writes_them_or_names_a_missing_one(owner):
    put(owner, "hols")
    owner.post("/v1/tasks", task_body(exclude_calendars=["hols"]), format="json")
    (exported,) = [json.loads(line) for line in b"".join(owner.get("/v1/tasks/export").streaming_content).splitlines()]
    assert exported["schedule"]["exclude_calendars"] == ["hols"]
    renamed = {**exported, "name": "copy"}
    imported = owner.post("/v1/tasks/import", json.dumps(renamed) + "\n", content_type="application/x-ndjson")
    assert imported.status_code == 200, imported.content
    copy = Task.objects.get(name="copy")
    assert copy.exclude_calendars == ["hols"]
    assert list(TaskCalendar.objects.filter(task_id=copy.pk).values_list("calendar_name", flat=True)) == ["hols"]
    missing = {**renamed, "name": "third", "schedule": {**renamed["schedule"], "exclude_calendars": ["nope"]}}
    refused = owner.post("/v1/tasks/import", json.dumps(missing) + "\n", content_type="application/x-ndjson")
    assert "lines[1].schedule.exclude_calendars[0]" in problem(refused, 400)["errors"]
