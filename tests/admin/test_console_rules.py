"""The console's rules on their own: masking, paced bulk retries, the bounded summary."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import timedelta

import pytest

from console.dead_letters import RetryTally, dead_summary, retry_paced
from domain.masking import MASK, is_secret_name, mask_body, mask_headers, mask_url
from jobs.models import Job, JobStatus
from tests.admin.support import make_dead_job
from tests.factories import make_job, make_task


@pytest.mark.parametrize(
    "name",
    ["Authorization", "cookie", "Proxy-Authorization", "X-Api-Key", "X-Auth-Token", "client_secret", "PASSWORD"],
)
def test_credential_looking_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["Content-Type", "Accept", "X-Trace", "User-Agent"])
def test_ordinary_header_names_are_not_secret(name):
    assert not is_secret_name(name)


def test_headers_keep_names_and_lose_secret_values():
    masked = mask_headers({"Authorization": "Bearer abc", "Accept": "application/json"})

    assert masked == {"Authorization": MASK, "Accept": "application/json"}


def test_headers_that_are_not_a_mapping_show_as_none():
    assert mask_headers(["Authorization: x"]) == {}


def test_url_userinfo_and_secret_query_values_are_masked():
    masked = mask_url("https://user:pw@hooks.example.com/run?access_token=abc&page=2")

    assert "pw" not in masked and "abc" not in masked
    assert masked.startswith(f"https://{MASK}@hooks.example.com/run?")
    assert "page=2" in masked


def test_json_bodies_lose_secret_keys_at_any_depth_and_other_bodies_are_shown_as_sent():
    body = json.dumps({"auth": {"password": "p"}, "items": [{"api_key": "k", "id": 1}]})

    masked = json.loads(mask_body(body))

    assert masked == {"auth": MASK, "items": [{"api_key": MASK, "id": 1}]}
    assert mask_body("plain text") == "plain text"
    assert mask_body("") == ""


@pytest.mark.django_db
def test_a_paced_retry_makes_the_dead_jobs_due_one_interval_apart_in_the_given_order():
    task = make_task()
    jobs = [make_dead_job(task, scheduled_at=task.next_run_at + timedelta(minutes=n)) for n in range(4)]
    order = [jobs[2].pk, jobs[0].pk, jobs[3].pk, jobs[1].pk]
    tally = RetryTally()

    retry_paced(order, per_second=4, limit=10, tally=tally)

    assert tally.requeued == order
    due = {job.pk: job.next_attempt_at for job in Job.objects.filter(pk__in=order)}
    gaps = [(due[later] - due[earlier]).total_seconds() for earlier, later in itertools.pairwise(order)]
    assert gaps == [pytest.approx(0.25, abs=0.002)] * 3
    assert {job.status for job in Job.objects.filter(pk__in=order)} == {JobStatus.PENDING}


@pytest.mark.django_db
def test_an_unpaced_retry_makes_every_job_due_at_once():
    task = make_task()
    jobs = [make_dead_job(task, scheduled_at=task.next_run_at + timedelta(minutes=n)) for n in range(3)]

    retry_paced([job.pk for job in jobs], per_second=0, limit=10, tally=RetryTally())

    assert len(set(Job.objects.filter(pk__in=[job.pk for job in jobs]).values_list("next_attempt_at", flat=True))) == 1


@pytest.mark.django_db
def test_a_paced_retry_counts_gone_and_not_dead_jobs_and_paces_only_the_dead_ones():
    task = make_task()
    dead = [make_dead_job(task, scheduled_at=task.next_run_at + timedelta(minutes=n)) for n in range(2)]
    pending = make_job(task, scheduled_at=task.next_run_at + timedelta(minutes=5))
    before = Job.objects.get(pk=pending.pk).next_attempt_at
    tally = RetryTally()

    retry_paced([dead[0].pk, pending.pk, uuid.uuid4(), dead[1].pk], per_second=2, limit=10, tally=tally)

    assert (tally.requeued, tally.gone, tally.not_dead) == ([dead[0].pk, dead[1].pk], 1, 1)
    first, second = (Job.objects.get(pk=job.pk).next_attempt_at for job in dead)
    assert (second - first).total_seconds() == pytest.approx(0.5, abs=0.002)  # no slot left for the others
    assert Job.objects.get(pk=pending.pk).next_attempt_at == before


@pytest.mark.django_db
def test_a_paced_retry_stops_at_the_limit_and_says_so():
    task = make_task()
    jobs = [make_dead_job(task, scheduled_at=task.next_run_at + timedelta(minutes=n)) for n in range(3)]
    tally = RetryTally()

    retry_paced([job.pk for job in jobs], per_second=0, limit=2, tally=tally)

    assert (len(tally.requeued), tally.left_over) == (2, True)
    assert Job.objects.filter(status=JobStatus.DEAD).count() == 1


@pytest.mark.django_db
def test_summary_marks_counts_as_lower_bounds_when_the_scan_is_capped():
    task = make_task(tenant_id="tenant-a")
    for _ in range(3):
        make_dead_job(task)

    capped = dead_summary(scan_rows=2)
    whole = dead_summary(scan_rows=3)

    assert capped.capped and capped.scanned == capped.tenants[0].dead == 3  # N + 1 rows read, so it knows
    assert not whole.capped and whole.scanned == 3 and whole.tenants[0].dead == 3


@pytest.mark.django_db
def test_summary_of_an_empty_dead_letter_queue_is_empty():
    summary = dead_summary()

    assert summary.tenants == [] and summary.scanned == 0 and not summary.capped
