"""A deadlock victim run again (jobs.queue.deadlocks); the claim and the tick use it against MariaDB
(tests/workers/test_executor_fair_claim.py, tests/workers/test_scheduler.py)."""

from __future__ import annotations

import pytest
from django.db.utils import OperationalError

from jobs.queue import deadlocks


def deadlock() -> OperationalError:
    return OperationalError(deadlocks.MYSQL_DEADLOCK, "Deadlock found when trying to get lock")


def test_a_victim_runs_again_after_a_short_random_wait(monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(deadlocks.time, "sleep", waits.append)
    outcomes: list[object] = [deadlock(), deadlock(), "done"]

    def run() -> object:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert deadlocks.retry_deadlocks(run, what="tick") == "done"
    low, high = deadlocks.RETRY_WAIT_SECONDS
    assert len(waits) == 2 and all(low <= wait <= high for wait in waits)


def test_the_last_deadlock_and_any_other_error_reach_the_caller(monkeypatch):
    monkeypatch.setattr(deadlocks.time, "sleep", lambda seconds: None)
    calls: list[int] = []

    def always_deadlocked() -> None:
        calls.append(1)
        raise deadlock()

    with pytest.raises(OperationalError):
        deadlocks.retry_deadlocks(always_deadlocked, what="tick")
    assert len(calls) == deadlocks.DEADLOCK_RETRIES

    def lost() -> None:
        calls.append(2)
        raise OperationalError(2013, "Lost connection")

    with pytest.raises(OperationalError):
        deadlocks.retry_deadlocks(lost, what="claim")
    assert calls.count(2) == 1
