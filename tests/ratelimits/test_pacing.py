"""The pacing rule, pure: grants within burst + rate x window, in any order; held jobs told distinct times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ratelimits.origins import OriginError, normalise_origin, origin_of_url
from ratelimits.pacing import Bucket


def _max_in_window(times: list[float], window: float) -> int:
    ordered = sorted(times)
    best = 0
    start = 0
    for end, at in enumerate(ordered):
        while ordered[start] < at - window:
            start += 1
        best = max(best, end - start + 1)
    return best


@given(
    per_second=st.sampled_from([0.5, 1.0, 7.0, 50.0]),
    burst=st.integers(min_value=1, max_value=20),
    wanted=st.lists(st.floats(min_value=0, max_value=20, allow_nan=False), min_size=1, max_size=300),
)
def test_grants_in_any_window_never_exceed_burst_plus_rate_times_its_length(per_second, burst, wanted):
    bucket = Bucket(per_second=per_second, burst=burst, tat=None, blocked_until=None)
    granted = [at for at in wanted if bucket.admit(at) is None]
    assert granted  # the first call always goes
    for window in (0.0, 0.5, 1.0, 3.0):
        assert _max_in_window(granted, window) <= burst + per_second * window + 1e-9
    assert bucket.granted == len(granted)


def test_a_burst_goes_at_once_and_the_rest_are_told_one_time_each_in_order():
    bucket = Bucket(per_second=10.0, burst=3, tat=None, blocked_until=None)
    answers = [bucket.admit(100.0) for _ in range(6)]
    assert answers[:3] == [None, None, None]
    backs = answers[3:]
    assert backs == sorted(backs) and len(set(backs)) == 3
    assert all(back is not None and back > 100.0 for back in backs)
    # Each comes back at its time and is granted then.
    assert [bucket.admit(back) for back in backs if back is not None] == [None, None, None]


def test_a_retry_after_block_grants_nothing_before_it_limit_or_not():
    unlimited = Bucket(per_second=None, burst=1, tat=None, blocked_until=50.0)
    assert unlimited.admit(10.0) == 50.0
    assert unlimited.admit(50.0) is None
    limited = Bucket(per_second=100.0, burst=100, tat=None, blocked_until=50.0)
    assert limited.admit(10.0) == 50.0
    assert limited.admit(60.0) is None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Hooks.Example.com/a?b=1", "https://hooks.example.com:443"),
        ("http://127.0.0.1:8080/x", "http://127.0.0.1:8080"),
        ("http://user:pw@a.example/x", "http://a.example:80"),
        ("https://[::1]/", "https://[::1]:443"),
        ("ftp://a.example/", None),
        ("not a url", None),
        ("http://a.example:99999/", None),
    ],
)
def test_a_jobs_origin_is_read_from_its_url_in_the_one_form(url, origin):
    assert origin_of_url(url) == origin
    if origin is not None:
        assert normalise_origin(origin) == origin  # the API's form and the claim's meet


@pytest.mark.parametrize(
    "value", ["https://a.example/x", "https://a.example?x", "https://a.example#f", " https://a.example"]
)
def test_an_origin_has_nothing_beside_scheme_host_and_port(value):
    with pytest.raises(OriginError):
        normalise_origin(value)
