"""The concurrency harness itself: results in order, and a thread's failure fails the test."""

from __future__ import annotations

import pytest

from tests.concurrency import at_once


def test_results_come_back_in_the_order_of_their_arguments():
    assert at_once(lambda n: n * 2, [(1,), (2,), (3,)]) == [2, 4, 6]


def test_a_failing_thread_fails_the_caller():
    def work(n: int) -> int:
        return 1 // n

    with pytest.raises(ZeroDivisionError):
        at_once(work, [(1,), (0,)])
