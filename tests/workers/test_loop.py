"""The shared worker loop: busy steps repeat, idle steps sleep, signals stop, lost DBs back off."""

import gc
import os
import random
import signal
import threading
import time

import pytest
from django.core.management.base import CommandError
from django.db.utils import InterfaceError, OperationalError

from workers.loop import LoopFailed, ReconnectBackoff, StopFlag, WorkerLoop, run_worker


class Steps:
    """A step that reports work for the first `busy` calls, then stops the loop."""

    def __init__(self, busy: int, stop: StopFlag, fail_first: int = 0, error: BaseException | None = None):
        self.calls = 0
        self.busy = busy
        self.stop = stop
        self.fail_first = fail_first
        self.error = error or OperationalError(2013, "Lost connection to server during query")

    def __call__(self) -> bool:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise self.error
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


def test_run_until_idle_steps_while_there_is_work_and_returns_at_the_first_idle_step():
    calls = []

    def step() -> bool:
        calls.append(1)
        return len(calls) < 4  # three busy steps, then idle

    started = time.monotonic()
    WorkerLoop("test", step, idle_seconds=3600).run_until_idle()
    assert len(calls) == 4
    assert time.monotonic() - started < 5  # never the idle sleep


def test_run_until_idle_raises_at_the_first_database_error_instead_of_retrying():
    stop = StopFlag()
    steps = Steps(busy=100, stop=stop, fail_first=1)
    with pytest.raises(LoopFailed, match=r"^test: OperationalError: .*Lost connection") as raised:
        WorkerLoop("test", steps, idle_seconds=3600, stop=stop).run_until_idle()
    assert steps.calls == 1
    assert isinstance(raised.value.__cause__, OperationalError)


def test_run_until_idle_stops_when_the_flag_is_set():
    stop = StopFlag()
    steps = Steps(busy=100, stop=stop)
    stop.set()
    WorkerLoop("test", steps, idle_seconds=3600, stop=stop).run_until_idle()
    assert steps.calls == 0


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


def test_a_stop_from_another_thread_ends_the_idle_sleep_at_once():
    stop = StopFlag()
    loop = WorkerLoop("test", lambda: False, idle_seconds=3600, stop=stop)
    thread = threading.Thread(target=loop.run)
    thread.start()
    time.sleep(0.2)
    began = time.monotonic()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - began < 2


def test_stop_listeners_hear_the_flag_and_a_late_one_hears_it_at_once():
    stop = StopFlag()
    heard = []
    stop.add_listener(lambda: heard.append("early"))
    stop.set()
    stop.add_listener(lambda: heard.append("late"))
    assert heard == ["early", "late"]


@pytest.mark.parametrize("error", [OperationalError(2006, "MySQL server has gone away"), InterfaceError(0, "")])
def test_a_dropped_database_is_retried_with_growing_backoff_and_reset_once_it_answers(error):
    stop = StopFlag()
    steps = Steps(busy=4, stop=stop, fail_first=3, error=error)
    loop = WorkerLoop("test", steps, idle_seconds=3600, stop=stop, backoff=ReconnectBackoff(initial=0.25, cap=2.0))
    waits = [loop.run_step() for _ in range(3)]
    assert all(0 < wait <= 2.0 for wait in waits)
    assert waits[0] <= waits[1] <= waits[2]  # [0.125, 0.25], then [0.25, 0.5], then [0.5, 1]
    assert loop.backoff.failures == 3
    assert loop.run_step() == 0.0  # the step now finds work: no wait at all
    assert loop.backoff.failures == 0
    assert loop.run_step() == 3600  # idle: the idle sleep


def test_a_bug_in_a_step_ends_the_loop_with_one_line_and_the_cause():
    stop = StopFlag()
    steps = Steps(busy=100, stop=stop, fail_first=1, error=ValueError("a bug\nsecond line"))
    with pytest.raises(LoopFailed) as raised:
        WorkerLoop("test", steps, idle_seconds=3600, stop=stop).run()
    assert str(raised.value) == "test: ValueError: a bug second line"
    assert isinstance(raised.value.__cause__, ValueError)


def test_run_worker_turns_a_failed_loop_into_one_command_error_line():
    def failing():
        raise LoopFailed('scheduler: OperationalError: (2002, "Can\'t connect")')

    with pytest.raises(CommandError, match=r"^scheduler: OperationalError"):
        run_worker(failing)


def test_the_backoff_doubles_with_jitter_up_to_a_low_cap():
    backoff = ReconnectBackoff(initial=0.25, cap=2.0, rng=random.Random(7))
    waits = [backoff.next_delay() for _ in range(12)]
    ceilings = [min(2.0, 0.25 * 2**n) for n in range(12)]
    assert all(ceiling / 2 <= wait <= ceiling for wait, ceiling in zip(waits, ceilings, strict=True))
    assert max(waits) <= 2.0  # every loop tries again within 2 s of the database coming back
    assert len(set(waits)) == len(waits)  # jittered: replicas do not reconnect in lockstep
    backoff.reset()
    assert backoff.next_delay() <= 0.25


@pytest.mark.parametrize(("initial", "cap"), [(0, 2.0), (3.0, 2.0), (-1, 1)])
def test_a_backoff_with_a_bad_range_is_refused(initial, cap):
    with pytest.raises(ValueError):
        ReconnectBackoff(initial=initial, cap=cap)


def test_a_dependency_named_unavailable_backs_off_up_to_the_cap_and_resets_on_success():
    class Away(Exception):
        pass

    outcomes: list = [Away("down")] * 5 + [True]

    def step():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    backoff = ReconnectBackoff(initial=0.5, cap=3.0, rng=random.Random(3))
    loop = WorkerLoop("test", step, idle_seconds=3600, backoff=backoff, unavailable=(Away,))
    waits = [loop.run_step() for _ in range(5)]
    ceilings = [0.5, 1.0, 2.0, 3.0, 3.0]
    assert all(ceiling / 2 <= wait <= ceiling for wait, ceiling in zip(waits, ceilings, strict=True))
    assert loop.run_step() == 0.0  # found work: at once, and the backoff starts over
    assert backoff.failures == 0


def test_an_error_not_named_unavailable_is_a_bug_that_ends_the_loop():
    def step():
        raise KeyError("a bug")

    with pytest.raises(LoopFailed, match="KeyError"):
        WorkerLoop("test", step, idle_seconds=1, unavailable=(OSError,)).run_step()


def test_run_worker_freezes_what_startup_built_before_the_loop_runs():
    frozen_during_the_loop = []
    gc.unfreeze()
    try:
        run_worker(lambda: frozen_during_the_loop.append(gc.get_freeze_count()))
        # Django, the apps and this test run's modules: far more than any loop allocates per step.
        assert frozen_during_the_loop[0] > 10_000
    finally:
        gc.unfreeze()


def test_a_second_loop_in_the_same_process_freezes_nothing_more():
    gc.unfreeze()
    try:
        run_worker(lambda: None)
        frozen = gc.get_freeze_count()
        garbage = [[n] for n in range(20_000)]  # tracked objects made after the first loop's start
        run_worker(lambda: None)
        # Frozen objects that die leave the permanent generation, so the count may fall a little;
        # freezing again would have added the 20,000 lists.
        assert gc.get_freeze_count() <= frozen
        del garbage
    finally:
        gc.unfreeze()
