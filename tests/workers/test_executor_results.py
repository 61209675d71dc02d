"""Results: the rule (pure) and the grouped, fenced writes on real MariaDB, incl. the seed's late-result table."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection

from jobs.models import Job, JobStatus
from jobs.queue import Outcome, claim_due, record_results, release_claims, sweep_expired_leases
from tests.workers.executor_db import bulk_jobs, db_now
from workers.executor.backoff import MAX_BACKOFF_SECONDS, retry_delay_seconds
from workers.executor.results import decide


def _decide(http_status=None, error=None, attempt=1, max_attempts=3, base=10):
    return decide(
        job_id=uuid.uuid4(),
        fence=attempt,
        attempt=attempt,
        max_attempts=max_attempts,
        backoff_base_seconds=base,
        http_status=http_status,
        error=error,
    )


# --- the rule ------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_any_2xx_succeeds(status):
    result = _decide(status)
    assert (result.outcome, result.http_status, result.error) == (Outcome.SUCCEEDED, status, None)


@pytest.mark.parametrize(
    ("status", "error", "text"),
    [
        (301, None, "HTTP 301"),
        (302, None, "HTTP 302"),
        (400, None, "HTTP 400"),
        (404, None, "HTTP 404"),
        (500, None, "HTTP 500"),
        (503, None, "HTTP 503"),
        (None, "timeout", "timeout"),
        (None, "connection failed", "connection failed"),
        (None, "destination not allowed", "destination not allowed"),
    ],
)
def test_anything_else_is_retried_with_backoff(status, error, text):
    result = _decide(status, error, attempt=2, base=10)
    assert (result.outcome, result.error, result.delay_seconds) == (Outcome.RETRY, text, 20)


@pytest.mark.parametrize(("attempt", "delay"), [(1, 10), (2, 20), (3, 40), (4, 80), (10, 5120), (14, 81920)])
def test_backoff_doubles_from_the_base(attempt, delay):
    assert retry_delay_seconds(attempt=attempt, backoff_base_seconds=10) == delay


@pytest.mark.parametrize("attempt", [15, 16, 100, 10**6])
def test_backoff_is_capped_at_one_day(attempt):
    assert retry_delay_seconds(attempt=attempt, backoff_base_seconds=10) == MAX_BACKOFF_SECONDS


def test_a_failure_at_max_attempts_is_dead():
    result = _decide(500, attempt=3, max_attempts=3)
    assert (result.outcome, result.delay_seconds) == (Outcome.DEAD, None)


def test_a_success_at_max_attempts_still_succeeds():
    assert _decide(200, attempt=3, max_attempts=3).outcome is Outcome.SUCCEEDED


# --- the writes ---------------------------------------------------------------

pytestmark_db = pytest.mark.django_db(transaction=True)


def _claim(count=1, **overrides):
    bulk_jobs(count, next_attempt_at=db_now() - timedelta(seconds=1), **overrides)
    return claim_due(worker_id="w-a", limit=count, lookahead_seconds=1)


def _result(job, http_status=200, error=None, body="ok"):
    return decide(
        job_id=job.id,
        fence=job.fence,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        backoff_base_seconds=job.backoff_base_seconds,
        http_status=http_status,
        error=error,
        response_body=body,
    )


def _seconds_until(job_id, column):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT TIMESTAMPDIFF(MICROSECOND, NOW(3), {column}) FROM jobs WHERE id = %s", [job_id.bytes])
        return cursor.fetchone()[0] / 1e6


@pytestmark_db
def test_a_success_is_recorded_with_its_status_and_body_and_the_lease_released():
    (job,) = _claim()
    report = record_results(worker_id="w-a", results=[_result(job, 201, body="created")])
    assert report.dropped == [] and len(report.written) == 1
    row = Job.objects.get(id=job.id)
    assert (row.status, row.http_status, row.response_body, row.error) == (JobStatus.SUCCEEDED, 201, "created", None)
    assert row.finished_at is not None and row.lease_expires_at is None and row.attempt == 1


@pytestmark_db
def test_a_failure_goes_back_to_pending_at_now_plus_the_backoff_on_the_database_clock():
    (job,) = _claim(backoff_base_seconds=7)
    record_results(worker_id="w-a", results=[_result(job, 503, body="busy")])
    row = Job.objects.get(id=job.id)
    assert (row.status, row.http_status, row.error, row.attempt) == (JobStatus.PENDING, 503, "HTTP 503", 1)
    assert row.worker_id is None and row.lease_expires_at is None and row.finished_at is None
    assert 6.5 < _seconds_until(job.id, "next_attempt_at") <= 7.0


@pytestmark_db
def test_a_failure_at_the_last_attempt_is_dead():
    (job,) = _claim(max_attempts=1)
    record_results(worker_id="w-a", results=[_result(job, None, error="timeout", body=None)])
    row = Job.objects.get(id=job.id)
    assert (row.status, row.error, row.http_status) == (JobStatus.DEAD, "timeout", None)
    assert row.finished_at is not None


@pytestmark_db
def test_a_mixed_batch_is_written_in_one_go_each_row_with_its_own_outcome():
    jobs = _claim(6)
    answers = [(None, "connection failed"), (200, None), (500, None), (302, None), (204, None), (None, "timeout")]
    results = [_result(job, status, error) for job, (status, error) in zip(jobs, answers, strict=True)]
    report = record_results(worker_id="w-a", results=results)
    assert len(report.written) == 6
    statuses = {row.id: (row.status, row.http_status) for row in Job.objects.filter(id__in=[j.id for j in jobs])}
    assert [statuses[job.id] for job in jobs] == [
        (JobStatus.PENDING, None),
        (JobStatus.SUCCEEDED, 200),
        (JobStatus.PENDING, 500),
        (JobStatus.PENDING, 302),
        (JobStatus.SUCCEEDED, 204),
        (JobStatus.PENDING, None),
    ]


# Each guard of the fence, broken: the claim is no longer ours (the results' and the give-backs' tests).
FENCE_BREAKS = {
    "another worker": "UPDATE jobs SET worker_id = 'w-other' WHERE id = %s",
    "a newer fence": "UPDATE jobs SET fence = fence + 1 WHERE id = %s",
    "returned to pending": "UPDATE jobs SET status = 'pending', worker_id = NULL WHERE id = %s",
    "already finished": "UPDATE jobs SET status = 'succeeded' WHERE id = %s",
}


@pytestmark_db
@pytest.mark.parametrize(
    "tamper",
    [*FENCE_BREAKS.values(), "DELETE FROM jobs WHERE id = %s"],
    ids=[*FENCE_BREAKS, "archived"],
)
def test_each_guard_that_no_longer_matches_drops_the_result_and_leaves_the_row_alone(tamper):
    jobs = _claim(2)
    with connection.cursor() as cursor:
        cursor.execute(tamper, [jobs[0].id.bytes])
        cursor.execute("SELECT status, worker_id, attempt, http_status FROM jobs WHERE id = %s", [jobs[0].id.bytes])
        before = cursor.fetchone()
    report = record_results(worker_id="w-a", results=[_result(job, 200) for job in jobs])
    assert [r.job_id for r in report.dropped] == [jobs[0].id]
    assert [r.job_id for r in report.written] == [jobs[1].id]
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, worker_id, attempt, http_status FROM jobs WHERE id = %s", [jobs[0].id.bytes])
        assert cursor.fetchone() == before
    assert Job.objects.get(id=jobs[1].id).status == JobStatus.SUCCEEDED


# --- the seed's late result: A claimed attempt 1, its lease expired, B may have claimed attempt 2 ---


def _expire_lease(job_id):
    with connection.cursor() as cursor:
        cursor.execute("UPDATE jobs SET lease_expires_at = NOW(3) - INTERVAL 1 SECOND WHERE id = %s", [job_id.bytes])


def _lease_lost_then_reclaimed_by_the_same_worker():
    """A (w-a) claims attempt 1, its lease expires, the reconciler returns it, w-a claims attempt 2."""
    (job_a,) = _claim()
    _expire_lease(job_a.id)
    assert sweep_expired_leases(limit=100) == 1
    (job_b,) = claim_due(worker_id="w-a", limit=1, lookahead_seconds=1)
    assert (job_b.id, job_b.attempt) == (job_a.id, 2)
    return job_a, job_b


@pytestmark_db
def test_late_result_before_the_reconciler_wins_and_the_reconciler_no_longer_matches():
    (job,) = _claim()
    _expire_lease(job.id)
    assert len(record_results(worker_id="w-a", results=[_result(job, 200)]).written) == 1
    assert sweep_expired_leases(limit=100) == 0
    assert Job.objects.get(id=job.id).status == JobStatus.SUCCEEDED


@pytestmark_db
def test_late_result_between_the_reconciler_and_the_reclaim_is_dropped_and_the_job_runs_again():
    (job,) = _claim()
    _expire_lease(job.id)
    assert sweep_expired_leases(limit=100) == 1
    report = record_results(worker_id="w-a", results=[_result(job, 200)])
    assert report.written == [] and [r.job_id for r in report.dropped] == [job.id]
    row = Job.objects.get(id=job.id)
    assert (row.status, row.attempt, row.error) == (JobStatus.PENDING, 1, "lease expired")
    (again,) = claim_due(worker_id="w-b", limit=1, lookahead_seconds=1)
    assert (again.id, again.attempt) == (job.id, 2)


@pytestmark_db
def test_late_result_after_the_reclaim_by_the_same_worker_id_is_dropped_and_leaves_the_new_claim_untouched():
    job_a, job_b = _lease_lost_then_reclaimed_by_the_same_worker()
    before = Job.objects.get(id=job_a.id)
    report = record_results(worker_id="w-a", results=[_result(job_a, 200)])
    assert report.written == [] and len(report.dropped) == 1
    after = Job.objects.get(id=job_a.id)
    assert (after.status, after.worker_id, after.attempt, after.lease_expires_at) == (
        JobStatus.RUNNING,
        "w-a",
        2,
        before.lease_expires_at,
    )
    assert len(record_results(worker_id="w-a", results=[_result(job_b, 500)]).written) == 1
    assert Job.objects.get(id=job_a.id).error == "HTTP 500"


@pytestmark_db
def test_a_batch_holding_an_old_and_a_new_result_for_one_job_writes_only_the_current_attempts():
    job_a, job_b = _lease_lost_then_reclaimed_by_the_same_worker()
    late, current = _result(job_a, 200), _result(job_b, 500)
    report = record_results(worker_id="w-a", results=[current, late])
    assert (report.written, report.dropped) == ([current], [late])
    row = Job.objects.get(id=job_a.id)
    assert (row.status, row.attempt, row.error) == (JobStatus.PENDING, 2, "HTTP 500")


@pytestmark_db
def test_column_values_after_a_null_first_row_are_written_whole():
    jobs = _claim(2)
    body = "é" * 2000 + "x" * 96  # 4 KiB of UTF-8 text after a first row with no body at all
    results = [_result(jobs[0], None, error="timeout", body=None), _result(jobs[1], 200, body=body)]
    record_results(worker_id="w-a", results=results)
    assert Job.objects.get(id=jobs[1].id).response_body == body
    assert Job.objects.get(id=jobs[0].id).response_body is None


@pytestmark_db
def test_any_text_in_a_result_lands_byte_for_byte_through_the_json_document():
    # The batch travels as one JSON document (JSON_TABLE): quotes, backslashes, control characters,
    # NUL, text that looks like JSON or SQL, and characters outside the BMP come back exactly.
    texts = ['say "hi" \\ \\n', "tab\tnl\ncr\r\x00nul \x1f", '{"a": [1, null]}', "'); DROP TABLE jobs; --", "🦀 ñ 漢字"]
    jobs = _claim(len(texts))
    results = [_result(job, None, error=text, body=text[::-1]) for job, text in zip(jobs, texts, strict=True)]
    assert len(record_results(worker_id="w-a", results=results).written) == len(texts)
    rows = {row.id: row for row in Job.objects.filter(id__in=[job.id for job in jobs])}
    assert [(rows[job.id].error, rows[job.id].response_body) for job in jobs] == [(t, t[::-1]) for t in texts]
    assert Job.objects.filter(status=JobStatus.PENDING, id__in=[job.id for job in jobs]).count() == len(texts)


# --- giving back a claim never called (run_executor's prefetch) -------------------------------


def _row(job_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, worker_id, attempt, lease_expires_at, started_at, attempts, pending_tenant"
            " FROM jobs WHERE id = %s",
            [job_id.bytes],
        )
        return cursor.fetchone()


@pytestmark_db
def test_a_claim_given_back_is_pending_and_due_again_with_its_attempt_undone():
    jobs = _claim(2)
    assert release_claims(worker_id="w-a", jobs=jobs) == 2
    for job in jobs:
        status, worker, attempt, lease, started, attempts, pending_tenant = _row(job.id)
        assert (status, worker, attempt, lease, started) == ("pending", None, 0, None, None)
        assert attempts in (None, "[]") and pending_tenant == "tenant-a"  # due for the fair claim again
    again = claim_due(worker_id="w-b", limit=2, lookahead_seconds=1)
    assert sorted((job.id, job.attempt) for job in again) == sorted((job.id, 1) for job in jobs)


@pytestmark_db
def test_a_retry_given_back_keeps_its_attempt_log_and_its_earlier_attempts():
    (job,) = _claim()
    record_results(worker_id="w-a", results=[_result(job, 500)])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE jobs SET next_attempt_at = NOW(3) - INTERVAL 1 SECOND WHERE id = %s", [job.id.bytes])
    (retry,) = claim_due(worker_id="w-a", limit=1, lookahead_seconds=1)
    _, _, _, _, _, attempts_before, _ = _row(job.id)
    assert release_claims(worker_id="w-a", jobs=[retry]) == 1
    status, worker, attempt, lease, started, attempts, _ = _row(job.id)
    assert (status, worker, attempt, lease) == ("pending", None, 1, None)
    assert started is not None and attempts == attempts_before  # the call that was made is still logged


@pytest.mark.parametrize("tamper", FENCE_BREAKS.values(), ids=FENCE_BREAKS)
@pytestmark_db
def test_a_give_back_whose_fence_no_longer_matches_leaves_the_row_alone(tamper):
    jobs = _claim(2)
    with connection.cursor() as cursor:
        cursor.execute(tamper, [jobs[0].id.bytes])
    before = _row(jobs[0].id)
    assert release_claims(worker_id="w-a", jobs=jobs) == 1
    assert _row(jobs[0].id) == before
    assert _row(jobs[1].id)[:3] == ("pending", None, 0)


@pytestmark_db
def test_a_give_back_after_the_reconciler_took_the_lease_back_matches_nothing():
    (job,) = _claim()
    _expire_lease(job.id)
    assert sweep_expired_leases(limit=100) == 1
    before = _row(job.id)
    assert release_claims(worker_id="w-a", jobs=[job]) == 0
    assert _row(job.id) == before and before[2] == 1  # the reconciler's attempt count stands


@pytestmark_db
def test_giving_back_nothing_sends_no_statement(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert release_claims(worker_id="w-a", jobs=[]) == 0


@pytestmark_db
def test_a_claimed_job_knows_about_how_much_memory_its_request_takes():
    (small,) = _claim()
    (big,) = _claim(request_body="€" * 40_000, request_headers={"X-Big": "v" * 4000})
    assert 0 < small.request_bytes < 1_000
    # Two bytes per character for the body (as Python keeps it), the headers' JSON, the URL.
    assert 84_000 < big.request_bytes < 86_000


# --- the fence only grows: a give-back leaves the token above any it handed out ---


@pytestmark_db
def test_a_result_carrying_a_given_back_holdings_token_matches_nothing_after_the_same_worker_claims_again():
    (first,) = _claim()
    assert release_claims(worker_id="w-a", jobs=[first]) == 1
    (second,) = claim_due(worker_id="w-a", limit=1, lookahead_seconds=1)
    assert second.id == first.id and second.attempt == first.attempt  # X-Attempt counts calls: none was made
    before = _row(first.id)
    report = record_results(worker_id="w-a", results=[_result(first, 200)])
    assert report.written == [] and [r.job_id for r in report.dropped] == [first.id]
    assert _row(first.id) == before  # the second holding's claim is untouched
    assert len(record_results(worker_id="w-a", results=[_result(second, 200)]).written) == 1


@pytestmark_db
def test_a_give_back_carrying_a_given_back_holdings_token_matches_nothing_after_the_same_worker_claims_again():
    (first,) = _claim()
    assert release_claims(worker_id="w-a", jobs=[first]) == 1
    assert [job.id for job in claim_due(worker_id="w-a", limit=1, lookahead_seconds=1)] == [first.id]
    before = _row(first.id)
    # The first give-back sent again (its answer was lost): the second holding keeps its claim.
    assert release_claims(worker_id="w-a", jobs=[first]) == 0
    assert _row(first.id) == before and before[:2] == ("running", "w-a")
