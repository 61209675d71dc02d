"""Claims before results: the result writer holds its writes while the claimer is behind
(workers.executor.result_writer, workers.executor.claimer).

Unit level: the database threads are stand-ins that record what was written and when; the
executor's own tests (test_executor_runner) run the hold against MariaDB.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db.utils import OperationalError

from jobs.queue import ClaimedJob, JobResult, Outcome, WriteReport
from workers.executor import result_writer
from workers.executor.claimer import Claimer
from workers.executor.credentials import Credentials
from workers.executor.result_writer import ResultWriter
from workers.executor.tally import Tally


class Database:
    """Records each call's function name, its batch size and the time it was made."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, float]] = []
        self.failing = False  # result writes fail as with a lost connection

    async def call(self, fn, **kwargs):
        if fn.__name__ == "record_results" and self.failing:
            self.calls.append(("failed", 0, time.monotonic()))
            raise OperationalError(2013, "Lost connection")
        batch = kwargs.get("results", kwargs.get("jobs", kwargs.get("blocks", [])))
        self.calls.append((fn.__name__, len(batch), time.monotonic()))
        return WriteReport(written=list(batch)) if fn.__name__ == "record_results" else len(batch)

    def answered(self) -> None:
        pass

    def failed(self) -> None:
        pass

    def unavailable(self, exc, **extra) -> float:
        return 0.01

    def written(self) -> int:
        return sum(count for name, count, _ in self.calls if name == "record_results")


def result(body: str = "ok") -> JobResult:
    return JobResult(uuid.uuid4(), 1, 1, Outcome.SUCCEEDED, 200, None, body, None, 5)


def claimed_job() -> ClaimedJob:
    at = datetime.now(UTC)
    return ClaimedJob(
        id=uuid.uuid4(), tenant_id="t", task_id=uuid.uuid4(), scheduled_at=at, attempt=1, fence=1,
        max_attempts=3, next_attempt_at=at, timeout_seconds=5, backoff_base_seconds=1, method="POST",
        url="http://127.0.0.1:9/", headers={}, body="", secret_ref=None, due_in=0.0,
    )  # fmt: skip


class Behind:
    def __init__(self, value: bool) -> None:
        self.value = value

    def __call__(self) -> bool:
        return self.value


def writer(db: Any, behind: Behind, **options: Any) -> ResultWriter:
    """A writer gathering results for 0.01 s unless `flush_seconds` says otherwise."""
    return ResultWriter(
        **{"worker_id": "w", "db": db, "tally": Tally(), "flush_seconds": 0.01, "behind": behind, **options}
    )


def on_a_loop(test: Callable[[Database], Awaitable[None]]) -> Callable[[], None]:
    """The async test run on a loop of its own (at most 10 s), with a new stand-in database."""

    def run() -> None:
        asyncio.run(asyncio.wait_for(test(Database()), 10))

    # Not functools.wraps: pytest would read the test's own signature and pass its `db` fixture.
    run.__name__ = run.__qualname__ = test.__name__
    return run


@contextlib.asynccontextmanager
async def running(db: Database, behind: Behind, **options: Any) -> AsyncIterator[ResultWriter]:
    """A writer running on this loop; closed (what it holds written) and awaited on leaving."""
    w = writer(db, behind, **options)
    task = asyncio.create_task(w.run())
    try:
        yield w
    finally:
        w.close()
        await task


async def written(db: Database, count: int) -> float:
    """Once `count` results are written: when the last write was made."""
    while db.written() < count:
        await asyncio.sleep(0.005)
    return db.calls[-1][2]


@on_a_loop
async def test_results_are_written_after_the_short_gathering_wait_when_the_claims_are_not_behind(db: Database) -> None:
    async with running(db, Behind(False), hold_seconds=5.0) as w:
        started = time.monotonic()
        w.add(result())
        assert await written(db, 1) - started < 0.5


@on_a_loop
async def test_while_the_claims_are_behind_results_wait_until_they_catch_up(db: Database) -> None:
    behind = Behind(True)
    async with running(db, behind, hold_seconds=5.0) as w:
        for _ in range(3):
            w.add(result())
        await asyncio.sleep(0.3)
        assert db.written() == 0  # held: the claims come first
        behind.value = False
        caught_up = time.monotonic()
        w.caught_up()
        assert await written(db, 3) - caught_up < 0.2  # at once, not after the hold


@on_a_loop
async def test_a_held_result_is_written_once_it_has_waited_the_hold_even_if_the_claims_stay_behind(
    db: Database,
) -> None:
    async with running(db, Behind(True), hold_seconds=0.4) as w:
        added = time.monotonic()
        w.add(result())
        assert 0.4 <= await written(db, 1) - added < 0.9


@on_a_loop
async def test_held_results_are_written_once_their_bodies_reach_the_bytes_bound(db: Database) -> None:
    bound = 3 * (result_writer.RESULT_OVERHEAD_BYTES + 1000)
    async with running(db, Behind(True), hold_seconds=30.0, hold_bytes=bound) as w:
        w.add(result("x" * 1000))
        w.add(result("x" * 1000))
        await asyncio.sleep(0.2)
        assert db.written() == 0
        reached = time.monotonic()
        w.add(result("x" * 1000))
        assert await written(db, 3) - reached < 0.5
        assert w._queued_bytes == 0 and w._queued_at == []


@on_a_loop
async def test_closing_writes_the_held_results_at_once(db: Database) -> None:
    async with running(db, Behind(True), hold_seconds=30.0) as w:
        for _ in range(700):
            w.add(result())
        await asyncio.sleep(0.1)
        assert db.written() == 0
        closed = time.monotonic()
    assert db.written() == 700 and [count for _, count, _ in db.calls] == [500, 200]
    assert time.monotonic() - closed < 0.5


@on_a_loop
async def test_a_batch_that_failed_goes_back_to_the_queue_with_its_age_and_bytes(db: Database) -> None:
    db.failing = True
    async with running(db, Behind(False)) as w:
        w.add(result("abc"))
        added_at = w._queued_at[0]
        while not db.calls:
            await asyncio.sleep(0.005)
        assert w._queued_bytes == result_writer.RESULT_OVERHEAD_BYTES + 3 and w._queued_at == [added_at]
        db.failing = False
        await written(db, 1)
        assert w._queued_bytes == 0 and w._queued_at == [] and w.results == []


def test_the_hold_leaves_most_of_the_room_a_lease_keeps_for_the_result_write():
    # A call ends LEASE_SLACK_SECONDS - START_WITHIN_SECONDS before its lease (call_slots); a held
    # result takes little of that room, so it is written before the reconciler takes its job back.
    from jobs.queue.claims import LEASE_SLACK_SECONDS
    from workers.executor.call_slots import START_WITHIN_SECONDS

    assert result_writer.RESULT_HOLD_SECONDS <= (LEASE_SLACK_SECONDS - START_WITHIN_SECONDS) / 4


@on_a_loop
async def test_a_steady_stream_of_results_is_held_from_the_oldest_not_the_newest(db: Database) -> None:
    async with running(db, Behind(True), hold_seconds=0.3) as w:
        first = time.monotonic()
        while db.written() == 0 and time.monotonic() - first < 2:
            w.add(result())
            await asyncio.sleep(0.05)
        assert 0.3 <= db.calls[0][2] - first < 0.6


def an_origin_job() -> ClaimedJob:
    job = claimed_job()
    job.url = "https://example.com/"
    return job


# What a writer is sent besides results: the statement that writes it, and how to send one.
SENDS = {
    "retry_after_blocks": ("block_origins", lambda w: w.block_origin(an_origin_job(), 30)),
    "give_backs": ("release_claims", lambda w: w.give_back(claimed_job())),
}


@pytest.mark.parametrize("kind", sorted(SENDS))
def test_a_give_back_or_a_block_is_written_at_once_while_results_are_held(kind: str) -> None:
    statement, send = SENDS[kind]

    async def scenario(db: Database) -> None:
        async with running(db, Behind(True), hold_seconds=30.0) as w:
            w.add(result())
            await asyncio.sleep(0.1)
            sent = time.monotonic()
            send(w)
            while not any(name == statement for name, _, _ in db.calls):
                await asyncio.sleep(0.005)
            assert next(at for name, _, at in db.calls if name == statement) - sent < 0.5
            assert db.written() == 0  # the result is still held
        assert db.written() == 1  # closing writes what is held

    on_a_loop(scenario)()


@pytest.mark.parametrize("stream", sorted(SENDS))
def test_a_stream_of_blocks_or_give_backs_never_holds_a_result_past_the_hold(stream: str) -> None:
    # One every 50 ms (a burst against rate-limited origins sends a 429 with Retry-After each),
    # with the shipped gathering wait: each is written at once, and the result goes when its hold ends.
    async def scenario(db: Database) -> None:
        async with running(db, Behind(True), hold_seconds=0.3, flush_seconds=0.1) as w:
            added = time.monotonic()
            w.add(result())
            while db.written() == 0 and time.monotonic() - added < 3:
                SENDS[stream][1](w)
                await asyncio.sleep(0.05)
            assert db.calls[-1][2] - added < 0.6
            assert sum(1 for name, _, _ in db.calls if name != "record_results") >= 3

    on_a_loop(scenario)()


class Clock:
    reading = None

    def stale(self) -> bool:
        return False


class Claims:
    """The claims' database thread: each claim waits for `go`, then takes every job it asked for
    (a full claim), or raises `error` once."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.started = asyncio.Event()
        self.error: Exception | None = None

    async def call(self, fn, *, limit: int = 0, **kwargs: Any) -> list[ClaimedJob]:
        self.started.set()
        await self.go.wait()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return [claimed_job() for _ in range(limit)]

    def answered(self) -> None:
        pass

    def unavailable(self, exc: BaseException, **extra: Any) -> float:
        return 0.01


def claimer(claims: Claims, caught_up: list[int], **options: Any) -> Claimer:
    return Claimer(
        worker_id="w", concurrency=5, prefetch=0, poll_seconds=1.0, clock=Clock(), credentials=Credentials(),
        db=claims, tally=Tally(), on_claimed=lambda jobs: None, on_caught_up=lambda: caught_up.append(1), **options,
    )  # fmt: skip


def test_a_stop_while_a_full_claim_is_under_way_leaves_the_claimer_caught_up():
    async def scenario() -> tuple[bool, list[int]]:
        claims, caught_up = Claims(), []
        c = claimer(claims, caught_up)
        task = asyncio.create_task(c.run())
        await claims.started.wait()
        c.stop()  # SIGTERM while the claim is on the claims thread
        claims.go.set()
        await task
        return c.behind, caught_up

    assert asyncio.run(asyncio.wait_for(scenario(), 10)) == (False, [])


def test_a_full_claim_puts_the_claimer_behind_and_a_failed_one_catches_it_up():
    async def scenario() -> None:
        claims, caught_up = Claims(), []
        c = claimer(claims, caught_up)
        claims.go.set()
        task = asyncio.create_task(c.run())
        while not c.behind:
            await asyncio.sleep(0.005)
        assert caught_up == []
        claims.go.clear()
        claims.started.clear()
        for _ in range(5):
            c.done(claimed_job())  # the slots free up: the next claim starts
        await claims.started.wait()
        claims.error = OperationalError(2013, "Lost connection")
        claims.go.set()
        while c.behind:
            await asyncio.sleep(0.005)
        assert caught_up == [1]
        c.stop()
        await task

    asyncio.run(asyncio.wait_for(scenario(), 10))
