"""Our delivery headers' instants: the cached formatter writes what strftime would."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from outbound.attempt_headers import http_instant, our_headers
from outbound.headers import DEADLINE_HEADER, SCHEDULED_AT_HEADER


@pytest.mark.parametrize(
    "value",
    [
        datetime(2027, 1, 1, 9, 0, 0, tzinfo=UTC),
        datetime(2027, 1, 1, 9, 0, 0, 999_999, tzinfo=UTC),
        datetime(2027, 12, 31, 23, 59, 59, 1_500, tzinfo=UTC),
        datetime(2028, 2, 29, 0, 0, 0, 999, tzinfo=UTC),  # under a millisecond: .000
    ],
)
def test_an_instant_is_utc_with_milliseconds_truncated_like_strftime(value):
    assert http_instant(value) == value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_instants_of_one_second_share_the_cached_text_but_keep_their_milliseconds():
    second = datetime(2027, 1, 1, 9, 0, 0, tzinfo=UTC)
    texts = [http_instant(second + timedelta(milliseconds=ms)) for ms in (0, 1, 999)]
    assert texts == ["2027-01-01T09:00:00.000Z", "2027-01-01T09:00:00.001Z", "2027-01-01T09:00:00.999Z"]


def test_the_deadline_is_the_sending_instant_plus_the_timeout():
    headers = our_headers(
        job_id="j",
        scheduled_at=datetime(2027, 1, 1, 9, 0, tzinfo=UTC),
        attempt=1,
        sent_at=datetime(2027, 1, 1, 9, 0, 0, 20_000, tzinfo=UTC),
        timeout_seconds=30,
        secret=None,
        signing_keys=(),
        body=b"",
    )
    assert headers[SCHEDULED_AT_HEADER] == "2027-01-01T09:00:00.000Z"
    assert headers[DEADLINE_HEADER] == "2027-01-01T09:00:30.020Z"


def test_an_instant_in_another_zone_or_naive_is_written_in_utc():
    aware = datetime(2027, 1, 1, 11, 0, 0, 5_000, tzinfo=timezone(timedelta(hours=2)))
    assert http_instant(aware) == "2027-01-01T09:00:00.005Z"
    assert http_instant(datetime(2027, 1, 1, 9, 0, 0, 5_000)) == "2027-01-01T09:00:00.005Z"  # naive: UTC
