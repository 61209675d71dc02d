"""Retry-After on 429/503 sets the next attempt (seconds or an HTTP date), bounded by the backoff cap."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from jobs.models import Job, JobStatus
from jobs.queue import Outcome
from tests.processes import wait_until
from tests.receivers import Receiver
from tests.workers.executor_db import bulk_jobs, db_now
from tests.workers.executor_helpers import claimed, policy_for, send
from tests.workers.test_executor_runner import Running
from workers.executor.backoff import MAX_BACKOFF_SECONDS, retry_after_for, retry_after_seconds
from workers.executor.results import decide

NOW = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120),
        ("0", 0),
        (" 7 ", 7),
        ("Fri, 01 Jan 2027 12:02:00 GMT", 120),
        ("Fri, 01 Jan 2027 11:00:00 GMT", 0),  # in the past: now
        ("99999999", MAX_BACKOFF_SECONDS),  # capped at a day
        ("Sun, 01 Jan 2034 00:00:00 GMT", MAX_BACKOFF_SECONDS),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        (None, None),
        # Years past datetime's range: ValueError and OverflowError inside the parser, read as unusable.
        ("Fri, 31 Dec 99999 23:59:59 GMT", None),
        ("Fri, 31 Dec 999999999999 23:59:59 GMT", None),
        ("Fri, 31 Dec 9999 23:59:59 GMT", MAX_BACKOFF_SECONDS),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(value, seconds):
    assert retry_after_seconds(value, now=NOW) == seconds


def _decide(status, retry_after, attempt=1, max_attempts=3):
    return decide(
        job_id=uuid.uuid4(),
        fence=attempt,
        attempt=attempt,
        max_attempts=max_attempts,
        backoff_base_seconds=10,
        http_status=status,
        retry_after_seconds=retry_after,
    )


@pytest.mark.parametrize("status", [429, 503])
def test_a_429_or_503_with_retry_after_waits_as_asked(status):
    result = _decide(status, 300)
    assert (result.outcome, result.delay_seconds) == (Outcome.RETRY, 300)


def test_retry_after_on_other_statuses_or_unreadable_falls_back_to_our_backoff():
    assert _decide(500, 300).delay_seconds == 10
    assert _decide(503, None, attempt=2).delay_seconds == 20


def test_retry_after_never_extends_the_attempt_budget():
    assert _decide(503, 60, attempt=3, max_attempts=3).outcome is Outcome.DEAD


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


def test_the_client_reads_the_header_from_the_answer(receiver):
    job = claimed(receiver.url("/retry-after/429/42"))
    delivery = send(job, policy=policy_for(f"127.0.0.1:{receiver.port}"))
    assert (delivery.http_status, delivery.retry_after) == (429, "42")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("header", ["600", "{date}"])
def test_a_real_executor_schedules_the_next_attempt_when_the_receiver_asked(receiver, header):
    started = db_now()
    if header == "{date}":
        header = (started + timedelta(seconds=600)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    (job_id,) = bulk_jobs(1, url=receiver.url(f"/retry-after/503/{quote(header)}"), next_attempt_at=started)
    running = Running(receiver)
    try:
        wait_until(lambda: Job.objects.get(id=job_id).attempt == 1 and Job.objects.get(id=job_id).status == "pending")
    finally:
        running.stop()
    job = Job.objects.get(id=job_id)
    assert (job.status, job.http_status) == (JobStatus.PENDING, 503)
    # Our backoff would have been 10 s; the receiver asked for 10 minutes.
    wait = (job.next_attempt_at - started).total_seconds()
    assert 590 <= wait <= 615, wait


HUGE_YEAR = "Fri, 31 Dec 999999999999 23:59:59 GMT"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("status", "outcome"), [(200, JobStatus.SUCCEEDED), (503, JobStatus.PENDING)])
def test_a_retry_after_past_any_calendar_still_writes_the_result(receiver, status, outcome):
    """A header the parser overflows on is unusable, never a crash: the 200 is recorded, the 503 backs off as ours."""
    started = db_now()
    (job_id,) = bulk_jobs(1, url=receiver.url(f"/retry-after/{status}/{quote(HUGE_YEAR)}"), next_attempt_at=started)
    running = Running(receiver)
    try:
        wait_until(lambda: Job.objects.get(id=job_id).status == outcome and Job.objects.get(id=job_id).attempt == 1)
    finally:
        running.stop()
    job = Job.objects.get(id=job_id)
    assert (job.status, job.http_status) == (outcome, status)
    if status == 503:
        wait = (job.next_attempt_at - started).total_seconds()
        assert wait <= 15, wait  # our backoff (10 s), not the header


def test_retry_after_is_read_only_where_the_status_gives_it_meaning():
    """On a 200 or a 500 the header is not parsed at all: nothing it holds can affect the result."""
    assert retry_after_for(200, HUGE_YEAR, now=NOW) is None
    assert retry_after_for(500, "120", now=NOW) is None
    assert retry_after_for(429, "120", now=NOW) == 120
    assert retry_after_for(503, HUGE_YEAR, now=NOW) is None
