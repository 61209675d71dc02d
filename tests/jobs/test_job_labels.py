"""A job carries its task's labels as they were when it was made, in the queue and in the history."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from history.sql_store import SqlHistoryStore
from history.stores import set_history_store
from jobs.models import Job, JobStatus
from tasks.models import Task
from workers.archiver import Archiver
from workers.scheduler import Scheduler

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"


def _create(owner, labels):
    body = {
        "name": "labelled",
        "schedule": {"cron": "* * * * *", "timezone": "UTC"},
        "http": {"url": "https://example.com/hook"},
        "labels": labels,
    }
    response = owner.post(TASKS, body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _make_due(task_id: str) -> None:
    Task.objects.filter(pk=task_id).update(next_run_at=timezone.now().replace(microsecond=0) - dt.timedelta(seconds=1))


def test_the_scheduled_and_the_run_now_jobs_keep_the_labels_of_their_time(owner):
    task = _create(owner, {"env": "prod", "team": "ops"})
    _make_due(task["id"])
    Scheduler(lookahead_seconds=0).tick()
    scheduled = Job.objects.get(task_id=task["id"])

    relabel = owner.patch(
        f"{TASKS}/{task['id']}", {"labels": {"env": "dev", "team": None}}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert relabel.status_code == 200, relabel.content
    run = owner.post(f"{TASKS}/{task['id']}/run")
    assert run.status_code in (201, 202), run.content

    assert owner.get(f"/v1/jobs/{scheduled.id}").json()["labels"] == {"env": "prod", "team": "ops"}
    assert owner.get(f"/v1/jobs/{run.json()['id']}").json()["labels"] == {"env": "dev"}
    history = owner.get(f"{TASKS}/{task['id']}/history").json()["results"]
    assert {entry["id"]: entry["labels"] for entry in history} == {
        str(scheduled.id): {"env": "prod", "team": "ops"},
        run.json()["id"]: {"env": "dev"},
    }


def test_an_archived_job_keeps_its_labels_in_the_history_store(owner):
    store = SqlHistoryStore()
    set_history_store(store)
    try:
        task = _create(owner, {"env": "prod"})
        _make_due(task["id"])
        Scheduler(lookahead_seconds=0).tick()
        job = Job.objects.get(task_id=task["id"])
        Job.objects.filter(pk=job.pk).update(
            status=JobStatus.SUCCEEDED, finished_at=timezone.now() - dt.timedelta(hours=1)
        )
        owner.patch(f"{TASKS}/{task['id']}", {"labels": {"env": "dev"}}, format="json", HTTP_IF_MATCH='"1"')

        Archiver(store=store, succeeded_after_seconds=1).step()

        assert not Job.objects.filter(pk=job.pk).exists()
        (entry,) = owner.get(f"{TASKS}/{task['id']}/history").json()["results"]
        assert (entry["id"], entry["archived"], entry["labels"]) == (str(job.id), True, {"env": "prod"})
        assert owner.get(f"/v1/jobs/{job.id}").json()["labels"] == {"env": "prod"}
    finally:
        set_history_store(None)


def test_a_job_made_before_jobs_carried_labels_shows_none(owner):
    task = _create(owner, {"env": "prod"})
    _make_due(task["id"])
    Scheduler(lookahead_seconds=0).tick()
    job = Job.objects.get(task_id=task["id"])
    Job.objects.filter(pk=job.pk).update(labels=None)

    assert owner.get(f"/v1/jobs/{job.id}").json()["labels"] == {}
