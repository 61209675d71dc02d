"""Two support agents retrying the same jobs at once: each job is requeued, and audited, once."""

from __future__ import annotations

import re
import threading

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.db import connections
from django.test import Client
from django.urls import reverse

from jobs.models import Job, JobStatus
from tests.admin.support import make_dead_job, make_staff, support_group
from tests.factories import make_task

JOBS = 30


@pytest.mark.django_db(transaction=True)
def test_two_agents_retrying_the_same_selection_requeue_and_log_each_job_once():
    group = support_group()
    agents = [make_staff(f"agent-{n}", groups=(group,)) for n in range(2)]
    task = make_task()
    job_ids = [str(make_dead_job(task).pk) for _ in range(JOBS)]
    barrier = threading.Barrier(len(agents))
    messages: list[str] = []
    errors: list[BaseException] = []

    def retry_as(agent):
        try:
            client = Client()
            client.force_login(agent)
            barrier.wait(timeout=10)
            response = client.post(
                reverse("admin:jobs_deadjob_changelist"),
                {"action": "retry_selected", ACTION_CHECKBOX_NAME: job_ids},
                follow=True,
            )
            # From the page, not response.context: the test client's context capture is not thread-safe.
            messages.extend(re.findall(r"Requeued \d+;[^<]*", response.content.decode()))
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=retry_as, args=(agent,)) for agent in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert len(messages) == len(agents)
    requeued = [int(re.match(r"Requeued (\d+);", message).group(1)) for message in messages]
    not_dead = [int(re.search(r"no longer dead (\d+)", message).group(1)) for message in messages]
    assert sum(requeued) == JOBS and sum(not_dead) == JOBS
    assert Job.objects.filter(status=JobStatus.PENDING).count() == JOBS
    logged = list(LogEntry.objects.values_list("object_id", flat=True))
    assert sorted(logged) == sorted(job_ids)
