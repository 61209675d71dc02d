"""Reading the attempt log's stored text (domain.attempt_log): unit level, no database."""

from __future__ import annotations

import datetime as dt

import pytest

from domain.attempt_log import Attempt, read_attempts

FINISHED = dt.datetime(2026, 12, 1, 14, 0, 0, 250_000, tzinfo=dt.UTC)
FINISHED_MS = 1796133600250  # FINISHED in Unix milliseconds


def test_an_entry_reads_back_with_its_start_from_the_duration():
    text = f'[[3, {FINISHED_MS}, 1250, "pending", 503, "HTTP 503"]]'
    assert read_attempts(text) == [
        Attempt(
            attempt=3,
            started_at=FINISHED - dt.timedelta(milliseconds=1250),
            finished_at=FINISHED,
            duration_ms=1250,
            status="pending",
            http_status=503,
            error="HTTP 503",
        )
    ]


def test_times_past_2038_read_back():
    # 2040-01-01T00:00:00.007Z: the writers count milliseconds with TIMESTAMPDIFF, not UNIX_TIMESTAMP.
    [entry] = read_attempts('[[1, 2208988800007, 5, "succeeded", 200, null]]')
    assert entry.finished_at == dt.datetime(2040, 1, 1, 0, 0, 0, 7000, tzinfo=dt.UTC)


def test_without_a_duration_there_is_no_start():
    [entry] = read_attempts(f'[[1, {FINISHED_MS}, null, "succeeded", 200, null]]')
    assert (entry.started_at, entry.duration_ms, entry.error) == (None, None, None)


def test_an_entry_of_the_first_keyed_shape_still_reads():
    # Written before the compact shape (the history stores keep such logs for their TTL).
    text = (
        '[{"attempt": 2, "claimed_at": "2026-12-01 13:59:59.000", "started_at": "2026-12-01 14:00:00.000",'
        ' "finished_at": "2026-12-01 14:00:00.250", "duration_ms": null, "status": "pending",'
        ' "http_status": null, "error": "lease expired"}]'
    )
    [entry] = read_attempts(text)
    assert (entry.attempt, entry.status, entry.error, entry.duration_ms) == (2, "pending", "lease expired", None)
    assert (entry.started_at, entry.finished_at) == (FINISHED - dt.timedelta(milliseconds=250), FINISHED)


@pytest.mark.parametrize("text", [None, "", "[]", "not json", '{"attempt": 1}', "[1, 2]"])
def test_no_log_or_an_unreadable_one_reads_as_no_attempts(text):
    assert read_attempts(text) == []


@pytest.mark.parametrize(
    "entry",
    [
        '{"attempt": 1, "status": "pending"}',  # a keyed object without its finish
        '{"attempt": 1, "status": "pending", "finished_at": "yesterday"}',  # a finish that is no time
        f'[1, {FINISHED_MS}, 5, "succeeded", 200]',  # a field missing
        f'["1", {FINISHED_MS}, 5, "succeeded", 200, null]',  # attempt not a number
        '[1, "2026-12-01 14:00:00", 5, "succeeded", 200, null]',  # a formatted time
        '[1, 1796133600.25, 5, "succeeded", 200, null]',  # seconds, not milliseconds
        f"[1, {FINISHED_MS}, 5, null, 200, null]",  # no status
        f'[true, {FINISHED_MS}, 5, "succeeded", 200, null]',  # a boolean is no attempt number
    ],
)
def test_an_unreadable_entry_is_left_out_and_the_others_kept(entry):
    text = f'[{entry}, [2, {FINISHED_MS}, 7, "succeeded", 200, null]]'
    assert [a.attempt for a in read_attempts(text)] == [2]


def test_wrongly_typed_optional_fields_read_as_none():
    [entry] = read_attempts(f'[[1, {FINISHED_MS}, "5", "dead", "500", 42]]')
    assert (entry.duration_ms, entry.http_status, entry.error, entry.started_at) == (None, None, None, None)
