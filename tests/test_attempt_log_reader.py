"""Reading the attempt log's stored text (jobsched_project.attempt_log): unit level, no database."""

from __future__ import annotations

import datetime as dt

import pytest

from jobsched_project.attempt_log import Attempt, read_attempts

FINISHED = dt.datetime(2026, 12, 1, 14, 0, 0, 250_000, tzinfo=dt.UTC)


def test_an_entry_reads_back_with_its_start_from_the_duration():
    text = f'[[3, {FINISHED.timestamp()}, 1250, "pending", 503, "HTTP 503"]]'
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


def test_milliseconds_survive_the_float():
    # 1796134938.019 is not exact in binary: the reader rounds to the millisecond the database wrote.
    [entry] = read_attempts('[[1, 1796134938.019, 5, "succeeded", 200, null]]')
    assert entry.finished_at.microsecond == 19_000 and entry.finished_at.tzinfo == dt.UTC


def test_without_a_duration_there_is_no_start():
    [entry] = read_attempts('[[1, 1796134938, null, "succeeded", 200, null]]')
    assert (entry.started_at, entry.duration_ms, entry.error) == (None, None, None)


@pytest.mark.parametrize("text", [None, "", "[]", "not json", '{"attempt": 1}', "[1, 2]"])
def test_no_log_or_an_unreadable_one_reads_as_no_attempts(text):
    assert read_attempts(text) == []


@pytest.mark.parametrize(
    "entry",
    [
        '{"attempt": 1, "status": "pending"}',  # a keyed object (an older shape)
        '[1, 1796134938.0, 5, "succeeded", 200]',  # a field missing
        '["1", 1796134938.0, 5, "succeeded", 200, null]',  # attempt not a number
        '[1, "2026-12-01 14:00:00", 5, "succeeded", 200, null]',  # a formatted time
        "[1, 1796134938.0, 5, null, 200, null]",  # no status
    ],
)
def test_an_unreadable_entry_is_left_out_and_the_others_kept(entry):
    text = f'[{entry}, [2, 1796134939.5, 7, "succeeded", 200, null]]'
    assert [a.attempt for a in read_attempts(text)] == [2]


def test_wrongly_typed_optional_fields_read_as_none():
    [entry] = read_attempts('[[1, 1796134938.0, "5", "dead", "500", 42]]')
    assert (entry.duration_ms, entry.http_status, entry.error, entry.started_at) == (None, None, None, None)
