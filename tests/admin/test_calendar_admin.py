"""Calendars in the admin: read, edit through the service (spans rewritten); the task page names its calendars."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tasks.calendars import services
from tasks.calendars.models import Calendar, CalendarSpan
from tests.admin.support import make_staff
from tests.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def calendar():
    spec = services.CalendarSpec(timezone="UTC", dates=(), ranges=())
    return services.calendar_put(tenant_id="tenant-a", name="hols", spec=spec)[0]


@pytest.fixture
def editor(db):
    return make_staff("cal-editor", perms=("calendars.view_calendar", "calendars.change_calendar", "tasks.view_task"))


def change_url(calendar: Calendar) -> str:
    return reverse("admin:calendars_calendar_change", args=[calendar.pk])


def test_calendars_are_listed_and_found_by_tenant(editor, client_as, calendar):
    client = client_as(editor)
    page = client.get(reverse("admin:calendars_calendar_changelist") + "?q=tenant-a")
    assert page.status_code == 200
    assert [c.pk for c in page.context["cl"].result_list] == [calendar.pk]
    assert client.get(reverse("admin:calendars_calendar_changelist") + "?q=tenant-b").context["cl"].result_count == 0


def test_an_edit_goes_through_the_service_and_rewrites_the_spans(editor, client_as, calendar):
    client = client_as(editor)
    form = {
        "timezone": "Europe/Madrid",
        "dates": '["2027-12-25"]',
        "ranges": '[{"from": "2027-08-01", "to": "2027-08-02"}]',
    }
    response = client.post(change_url(calendar), form)
    assert response.status_code == 302, response.content
    saved = Calendar.objects.get(pk=calendar.pk)
    assert (saved.timezone, saved.dates, saved.version) == ("Europe/Madrid", ["2027-12-25"], 2)
    assert CalendarSpan.objects.filter(calendar=saved).count() == 2


def test_a_bad_date_is_refused_naming_it(editor, client_as, calendar):
    response = client_as(editor).post(
        change_url(calendar), {"timezone": "UTC", "dates": '["2027-02-30"]', "ranges": "[]"}
    )
    assert response.status_code == 200
    assert "dates[0]" in str(response.context["adminform"].form.non_field_errors())
    assert Calendar.objects.get(pk=calendar.pk).version == 1


def test_no_add_nor_delete_in_the_admin(editor, client_as, calendar):
    client = client_as(editor)
    assert client.get(reverse("admin:calendars_calendar_add")).status_code == 403
    assert (
        client.post(reverse("admin:calendars_calendar_delete", args=[calendar.pk]), {"post": "yes"}).status_code == 403
    )


def test_the_task_page_shows_its_excluded_calendars(editor, client_as, calendar):
    task = make_task(exclude_calendars=["hols"])
    page = client_as(editor).get(reverse("admin:tasks_task_change", args=[task.pk]))
    assert page.status_code == 200
    assert b">hols</a>" in page.content
