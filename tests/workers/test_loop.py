"""The shared worker loop: busy steps repeat, idle steps sleep, signals stop, lost DBs back off."""

import os
import signal

import pytest
from django.db.utils import OperationalError

from workers.loop import StopFlag, WorkerLoop


class Steps:
    """A step that reports work for the first `busy` calls, then stops the loop."""

    def __init__(self, busy: int, stop: StopFlag, fail_first: int = 0):
        self.calls = 0
        self.busy = busy
        self.stop = stop
        self.fail_first = fail_first

    def __call__(self) -> bool:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise OperationalError(2013, "Lost connection to server during query")
        if self.calls > self.busy:
            self.stop.set()
            return False
        return True


def test_busy_steps_run_back_to_back_without_sleeping():
    stop = StopFlag()
    steps = Steps(busy=5, stop=stop)
    # A one-hour idle sleep would hang the test if a busy step ever slept.
    WorkerLoop("test", steps, idle_seconds=3600, stop=stop).run()
    assert steps.calls == 6


def test_once_runs_exactly_one_step():
    stop = StopFlag()
    steps = Steps(busy=100, stop=stop)
    WorkerLoop("test", steps, idle_seconds=3600, stop=stop).run(once=True)
    assert steps.calls == 1


def test_sigterm_sets_the_flag_and_interrupts_the_idle_sleep():
    stop = StopFlag()
    stop.install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5) is True
        assert stop.signal_name == "SIGTERM"
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_dropped_database_is_retried_with_growing_backoff():
    stop = StopFlag()
    steps = Steps(busy=0, stop=stop, fail_first=3)
    loop = WorkerLoop("test", steps, idle_seconds=3600, stop=stop)
    assert loop.run_step() is False
    first = loop._backoff
    assert loop.run_step() is False
    assert loop._backoff == 2 * first
    loop.run_step()
    assert loop.run_step() is False  # the step now succeeds (and stops)
    assert loop._backoff == 0.0


def test_a_dependency_named_unavailable_backs_off_up_to_the_cap_and_resets_on_success():
    class Away(Exception):
        pass

    outcomes = [Away("down")] * 5 + [True]

    def step():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    loop = WorkerLoop("test", step, idle_seconds=3600, unavailable=(Away,), max_backoff_seconds=3)
    waits = []
    for _ in range(5):
        assert loop.run_step() is False
        waits.append(loop._backoff)

    assert waits == [0.5, 1.0, 2.0, 3, 3]
    assert loop.run_step() is True
    assert loop._backoff == 0.0


def test_an_error_not_named_unavailable_still_propagates():
    def step():
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        WorkerLoop("test", step, idle_seconds=1).run_step()
