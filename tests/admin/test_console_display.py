"""What the console's pages say: times to the second in UTC, its own name, the lateness unit, task states."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from jobs.models import JobStatus
from tasks.models import TaskStatus
from tests.admin.support import make_staff
from tests.factories import db_now, make_job, make_task

pytestmark = pytest.mark.django_db

TASKS = reverse("admin:tasks_task_changelist")
JOBS = reverse("admin:jobs_job_changelist")
AT = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)


@pytest.fixture
def viewer(db):
    return make_staff("viewer", perms=("jobs.view_deadjob", "jobs.view_job", "tasks.view_task"))


def row_of(page: str, obj) -> str:
    """The changelist row that links to `obj`."""
    for row in re.findall(r"<tr[ >].*?</tr>", page, re.S):
        if f"/{obj.pk}/change/" in row:
            return row
    raise AssertionError(f"no row for {obj.pk}")


def cell(row: str, column: str) -> str:
    match = re.search(rf'<t[dh] class="field-{column}[^"]*"[^>]*>(.*?)</t[dh]>', row, re.S)
    assert match, f"no {column} column in {row}"
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


def test_list_and_detail_times_show_seconds_and_utc(viewer, client_as):
    task = make_task(next_run_at=AT)
    job = make_job(task, scheduled_at=AT)
    client = client_as(viewer)

    tasks_page = client.get(TASKS).content.decode()
    jobs_page = client.get(JOBS).content.decode()
    task_page = client.get(reverse("admin:tasks_task_change", args=[task.pk])).content.decode()
    job_page = client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()

    assert "2031-05-06 07:08:09 UTC" in row_of(tasks_page, task)
    assert "2031-05-06 07:08:09 UTC" in row_of(jobs_page, job)
    assert "2031-05-06 07:08:09 UTC" in task_page and "2031-05-06 07:08:09 UTC" in job_page
    assert "a.m." not in tasks_page + jobs_page + task_page + job_page


def test_the_console_is_branded_as_the_support_console(viewer, client_as):
    page = client_as(viewer).get("/admin/").content.decode()

    assert "<title>" in page and "jobsched support console" in page.split("</title>")[0]
    assert 'id="site-name"' in page and "jobsched support console" in page.split('id="site-name"')[1][:200]
    assert "Django administration" not in page and "Django site admin" not in page


def test_the_lateness_chart_says_its_unit(viewer, client_as):
    task = make_task()
    due = db_now() - timedelta(minutes=2)
    make_job(
        task,
        scheduled_at=due,
        next_attempt_at=due,
        status=JobStatus.SUCCEEDED,
        attempt=1,
        started_at=due + timedelta(milliseconds=785),
        finished_at=due + timedelta(seconds=1),
    )

    page = client_as(viewer).get(reverse("admin:jobs_dashboard")).content.decode()

    lateness = page.split('id="panel-lateness"')[1].split('id="panel-leases"')[0]
    assert re.search(r">max 785 ms<", lateness), lateness[:400]


def test_a_deleted_task_shows_no_next_run(viewer, client_as):
    deleted = make_task(status=TaskStatus.DELETED, next_run_at=AT)
    client = client_as(viewer)

    row = row_of(client.get(TASKS).content.decode(), deleted)
    detail = client.get(reverse("admin:tasks_task_change", args=[deleted.pk])).content.decode()

    assert "2031" not in row
    assert "2031" not in detail.split("Schedule")[1].split("How it is doing")[0]


def test_a_fired_one_shot_is_not_shown_as_active(viewer, client_as):
    fired = make_task(run_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    fired.next_run_at = None  # what the scheduler writes once the run's job is created
    fired.save(update_fields=["next_run_at"])
    waiting = make_task(run_at=AT)
    client = client_as(viewer)

    page = client.get(TASKS).content.decode()
    detail = client.get(reverse("admin:tasks_task_change", args=[fired.pk])).content.decode()

    assert "Active" not in row_of(page, fired) and "fired" in row_of(page, fired)
    assert "fired" not in row_of(page, waiting) and "2031-05-06 07:08:09 UTC" in row_of(page, waiting)
    assert "fired" in detail


def test_a_jobs_page_shows_the_labels_it_was_made_with(viewer, client_as):
    task = make_task(labels={"env": "dev"})
    job = make_job(task, labels='{"env": "prod", "team": "ops"}')
    bare = make_job(task, scheduled_at=AT)
    client = client_as(viewer)

    page = client.get(reverse("admin:jobs_job_change", args=[job.pk])).content.decode()
    bare_page = client.get(reverse("admin:jobs_job_change", args=[bare.pk])).content.decode()

    shown = re.search(r'<div class="readonly">(<span class="task-label">.*?)</div>', page, re.S)
    assert shown and re.sub(r"<[^>]+>", "", shown.group(1)).split() == ["env=prod", "team=ops"]
    assert "env=dev" not in page
    assert 'class="task-label"' not in bare_page
