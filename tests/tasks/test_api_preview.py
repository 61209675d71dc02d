"""Next-run previews: UTC and local time, DST transitions marked, n bounded, bad input named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tasks import services
from tests.factories import make_task

pytestmark = pytest.mark.django_db
PREVIEW = "/v1/schedules/preview"


@pytest.fixture
def client(tenant_client):
    return tenant_client("tenant-a")


@pytest.fixture
def before_spring_forward(monkeypatch):
    """The clock two days before Madrid's 2027 spring-forward (28 March, 02:00 → 03:00)."""
    monkeypatch.setattr(services, "clock", lambda: datetime(2027, 3, 26, 12, 0, tzinfo=UTC))


def test_a_schedule_preview_shows_utc_and_local_times_and_marks_the_spring_forward(client, before_spring_forward):
    response = client.post(f"{PREVIEW}?n=3", {"cron": "30 2 * * *", "timezone": "Europe/Madrid"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["timezone"] == "Europe/Madrid"
    assert [(run["at"], run["local"], run["offset_changed_from"]) for run in body["runs"]] == [
        ("2027-03-27T01:30:00Z", "2027-03-27T02:30:00+01:00", None),
        # 02:30 does not exist that night: the run is at the first instant after the gap.
        ("2027-03-28T01:00:00Z", "2027-03-28T03:00:00+02:00", "+01:00"),
        ("2027-03-29T00:30:00Z", "2027-03-29T02:30:00+02:00", None),
    ]
    assert [run["dst"] for run in body["runs"]] == [False, True, True]


def test_a_fall_back_overlap_marks_the_ambiguous_local_time(client, monkeypatch):
    monkeypatch.setattr(services, "clock", lambda: datetime(2027, 10, 30, 12, 0, tzinfo=UTC))
    body = client.post(f"{PREVIEW}?n=2", {"cron": "30 2 * * *", "timezone": "Europe/Madrid"}, format="json").json()
    first, second = body["runs"]
    # A fixed-hour entry runs once, at the first 02:30 (summer time).
    assert (first["local"], first["ambiguous_local_time"]) == ("2027-10-31T02:30:00+02:00", True)
    assert (second["local"], second["offset_changed_from"]) == ("2027-11-01T02:30:00+01:00", "+02:00")


def test_the_default_is_ten_runs_and_a_one_shot_has_one(client, before_spring_forward):
    assert len(client.post(PREVIEW, {"cron": "* * * * *"}, format="json").json()["runs"]) == 10
    one_shot = client.post(f"{PREVIEW}?n=5", {"run_at": "2027-04-01T09:00:00+02:00"}, format="json").json()
    assert one_shot == {
        "timezone": None,
        "behind": False,
        "runs": [
            {
                "at": "2027-04-01T07:00:00Z",
                "local": "2027-04-01T07:00:00+00:00",
                "utc_offset": "+00:00",
                "dst": False,
                "offset_changed_from": None,
                "ambiguous_local_time": False,
                "late": False,
                "excluded_by": None,
                "call_at": "2027-04-01T07:00:00Z",  # no window: called at its time
            }
        ],
    }


@pytest.mark.parametrize("n", ["0", "101", "-1", "ten", "1.5", ""])
def test_n_outside_1_to_100_is_a_400_naming_n(client, n):
    response = client.post(f"{PREVIEW}?n={n}", {"cron": "* * * * *"}, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert list(response.json()["errors"]) == ["n"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"cron": "61 * * * *", "timezone": "UTC"}, "schedule.cron"),
        ({"cron": "0 0 30 2 *", "timezone": "UTC"}, "schedule.cron"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "schedule.timezone"),
        ({"cron": "* * * * *", "run_at": "2027-04-01T09:00:00Z"}, "schedule.run_at"),
        ({"run_at": "2027-04-01T09:00:00"}, "schedule.run_at"),
        ({"cron": "* * * * *", "every": 5}, "schedule.every"),
        ({}, "schedule.cron"),
    ],
)
def test_a_bad_schedule_is_a_400_naming_the_field(client, before_spring_forward, body, field):
    response = client.post(PREVIEW, body, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()


def test_a_saved_tasks_preview_starts_at_its_next_run(client):
    task = make_task(
        cron_expression="0 9 * * *", timezone="America/New_York", next_run_at=datetime(2027, 3, 13, 14, tzinfo=UTC)
    )
    runs = client.get(f"/v1/tasks/{task.pk}/preview?n=2").json()["runs"]
    assert [(run["at"], run["local"], run["offset_changed_from"]) for run in runs] == [
        ("2027-03-13T14:00:00Z", "2027-03-13T09:00:00-05:00", None),
        ("2027-03-14T13:00:00Z", "2027-03-14T09:00:00-04:00", "-05:00"),
    ]


def test_a_paused_tasks_preview_starts_from_now_as_a_resume_would(client, before_spring_forward):
    task = make_task(
        cron_expression="0 12 * * *", timezone="UTC", status="paused", next_run_at=datetime(2020, 1, 1, tzinfo=UTC)
    )
    runs = client.get(f"/v1/tasks/{task.pk}/preview?n=1").json()["runs"]
    assert runs[0]["at"] == "2027-03-27T12:00:00Z"


def test_another_tenants_or_a_missing_task_is_a_404(client, tenant_client):
    task = make_task()
    assert tenant_client("tenant-b").get(f"/v1/tasks/{task.pk}/preview").status_code == 404
    assert client.get("/v1/tasks/not-an-id/preview").status_code == 404
    assert client.get(f"/v1/tasks/{task.pk}/preview?n=0").status_code == 400


def test_a_one_shot_shows_its_run_until_it_has_fired_then_none(client):
    run_at = datetime(2027, 6, 1, 9, tzinfo=UTC)
    task = make_task(run_at=run_at)
    assert [run["at"] for run in client.get(f"/v1/tasks/{task.pk}/preview").json()["runs"]] == ["2027-06-01T09:00:00Z"]
    task.next_run_at = None  # the scheduler made its job
    task.save(update_fields=["next_run_at"])
    assert client.get(f"/v1/tasks/{task.pk}/preview").json() == {"timezone": None, "behind": False, "runs": []}
