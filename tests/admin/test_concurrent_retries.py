"""Two support agents retrying the same jobs at once: each job is requeued, and audited, once."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.test import Client
from django.urls import reverse

from jobs.models import Job, JobStatus
from tests.admin.support import make_dead_job, make_staff, support_group
from tests.concurrency import at_once
from tests.factories import make_task

JOBS = 30


@pytest.mark.django_db(transaction=True)
def test_two_agents_retrying_the_same_selection_requeue_and_log_each_job_once():
    group = support_group()
    agents = [make_staff(f"agent-{n}", groups=(group,)) for n in range(2)]
    task = make_task()
    job_ids = [str(make_dead_job(task).pk) for _ in range(JOBS)]
    clients = [Client() for _ in agents]
    for client, agent in zip(clients, agents, strict=True):
        client.force_login(agent)  # before the race: only the two POSTs run at once
    messages: list[str] = []

    def retry(client):
        return client.post(
            reverse("admin:jobs_deadjob_changelist"),
            {"action": "retry_selected", ACTION_CHECKBOX_NAME: job_ids},
            follow=True,
        )

    for response in at_once(retry, [(client,) for client in clients]):
        # From the page, not response.context: the test client's context capture is not thread-safe.
        messages.extend(re.findall(r"Requeued \d+;[^<]*", response.content.decode()))

    assert len(messages) == len(agents)
    requeued = [int(re.match(r"Requeued (\d+);", message).group(1)) for message in messages]
    not_dead = [int(re.search(r"no longer dead (\d+)", message).group(1)) for message in messages]
    assert sum(requeued) == JOBS and sum(not_dead) == JOBS
    assert Job.objects.filter(status=JobStatus.PENDING).count() == JOBS
    logged = list(LogEntry.objects.values_list("object_id", flat=True))
    assert sorted(logged) == sorted(job_ids)
