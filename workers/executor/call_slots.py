"""Call slots: at most `concurrency` calls in flight; due jobs beyond them wait in order.

A job that waited for a slot until too little of its lease was left for its call is given
back instead of fired (`START_WITHIN_SECONDS`, checked every `EXPIRE_CHECK_SECONDS`). Calls
start a slice at a time (`FIRE_SLICE` per turn of the event loop): a call's first step
(headers, the request's set-up, a connect) runs before any socket event is read, so hundreds
started at once put the first request on the wire only after all their first steps.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from jobs.queue import ClaimedJob, JobResult
from jobs.queue.claims import LEASE_SLACK_SECONDS
from outbound.client import DeliveryClient
from workers.metrics import EXECUTOR_FIRED, EXECUTOR_LATENESS

from .backoff import retry_after_for
from .clock import DatabaseClock
from .credentials import Credentials, send_with_credentials
from .results import decide
from .tally import Tally

logger = logging.getLogger(__name__)

FIRE_SLICE = 8  # calls started per turn of the event loop when a burst is due
# A job waiting for a call slot starts at most this long after its time (or its claim's, if later), so
# its whole call (bounded by its timeout) ends 20 s before its lease does, for its result to be written.
START_WITHIN_SECONDS = LEASE_SLACK_SECONDS - 20.0
EXPIRE_CHECK_SECONDS = 1.0  # how often jobs waiting for a call slot are checked against that bound


def start_by(job: ClaimedJob) -> float:
    """The latest database time at which `job` may start its call (see START_WITHIN_SECONDS)."""
    # due_in < 0: claimed after its time, and the lease runs from the claim's NOW(3).
    return job.next_attempt_at.timestamp() + max(0.0, -job.due_in) + START_WITHIN_SECONDS


@dataclass(kw_only=True, eq=False)
class CallSlots:
    """Start due jobs' calls within the free slots; each result goes to `on_result`, each job to `on_done`."""

    concurrency: int
    client: DeliveryClient
    credentials: Credentials
    clock: DatabaseClock
    tally: Tally
    on_result: Callable[[JobResult], None]
    on_give_back: Callable[[ClaimedJob, bool], None]  # (job, slow): never called; its claim goes back
    on_done: Callable[[ClaimedJob], None]  # a held job is answered (or its call crashed)
    # (job, seconds): its origin answered 429 or 503 with Retry-After (ResultWriter.block_origin).
    on_block: Callable[[ClaimedJob, int], None] = lambda job, seconds: None
    ready: deque[ClaimedJob] = field(default_factory=deque, init=False)  # due, waiting for a slot (in order)
    calls: int = field(default=0, init=False)  # in flight (counted here: `inflight` drops a task after its finally)
    inflight: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    _pump_handle: asyncio.Handle | None = field(default=None, init=False)  # the next turn's `_pump`, when due

    def start(self, jobs: list[ClaimedJob], *, stopping: bool = False) -> None:
        """Queue due jobs for a slot and start what the free slots allow; `stopping`: give back the rest."""
        self.ready.extend(jobs)
        if stopping:
            self.give_back_beyond_free_slots()
        if self._pump_handle is None:
            self._pump()

    def give_back_beyond_free_slots(self) -> None:
        """Give back the waiting jobs the free call slots cannot take now (the latest first)."""
        while len(self.ready) > max(0, self.concurrency - self.calls):
            self.on_give_back(self.ready.pop(), False)

    def take_waiting(self) -> list[ClaimedJob]:
        """Every job still waiting for a slot, out of the queue (never called: to be given back)."""
        jobs = list(self.ready)
        self.ready.clear()
        if self._pump_handle is not None:
            self._pump_handle.cancel()
            self._pump_handle = None
        return jobs

    async def cancel_calls(self) -> int:
        """Cancel the calls in flight (their leases expire: the reconciler's); how many."""
        abandoned = len(self.inflight)
        for task in list(self.inflight):
            task.cancel()
        await asyncio.gather(*self.inflight, return_exceptions=True)
        return abandoned

    async def expire_waiting(self) -> None:
        """Every EXPIRE_CHECK_SECONDS, give back the jobs that waited for a slot past `start_by`.

        Only here, not as each call starts (the hot path): the bound leaves 20 s before the lease
        ends, so a call started up to a check late still ends well before it.
        """
        while True:
            await asyncio.sleep(EXPIRE_CHECK_SECONDS)
            if not self.ready:
                continue
            database_now = self.clock.database_time()
            kept: deque[ClaimedJob] = deque()
            expired: list[ClaimedJob] = []
            for job in self.ready:
                (expired if database_now > start_by(job) else kept).append(job)
            self.ready = kept
            for job in expired:
                self.on_give_back(job, True)

    def _pump(self) -> None:
        """Start up to FIRE_SLICE due jobs now, within the free call slots; the rest on the next turns.

        A cold connection needs a few turns (connect, then send), and every turn also starts a
        slice, so slices are small; the extra turns cost one select each.
        """
        self._pump_handle = None
        room = min(FIRE_SLICE, self.concurrency - self.calls)
        if room <= 0 or not self.ready:
            return
        loop = asyncio.get_running_loop()
        database_now = self.clock.database_time()
        started = 0
        while started < room and self.ready:
            job = self.ready.popleft()
            # Lateness on the database clock, from the job's scheduled second (retries count their wait).
            late = max(0.0, database_now - job.scheduled_at.timestamp())
            self.tally.lateness.append(late)
            EXECUTOR_LATENESS.observe(late)
            self.calls += 1
            task = loop.create_task(self._call(job))
            self.inflight.add(task)
            task.add_done_callback(self.inflight.discard)
            started += 1
        self.tally.fired += started
        EXECUTOR_FIRED.inc(started)
        if self.ready and self.calls < self.concurrency:
            self._pump_handle = loop.call_soon(self._pump)

    async def _call(self, job: ClaimedJob) -> None:
        try:
            began = time.monotonic()
            delivery = await send_with_credentials(job, client=self.client, credentials=self.credentials)
            retry_after = retry_after_for(delivery.http_status, delivery.retry_after, now=datetime.now(UTC))
            if retry_after:
                self.on_block(job, retry_after)  # the origin, for every task of the tenant, not only this job
            self.on_result(
                decide(
                    job_id=job.id,
                    fence=job.fence,
                    attempt=job.attempt,
                    max_attempts=job.max_attempts,
                    backoff_base_seconds=job.backoff_base_seconds,
                    http_status=delivery.http_status,
                    error=delivery.error,
                    response_body=delivery.response_body,
                    duration_ms=round((time.monotonic() - began) * 1000),
                    retry_after_seconds=retry_after,
                )
            )
        except Exception:
            # No result is written: the lease expires and the reconciler returns the job.
            logger.exception("delivery failed unexpectedly", extra={"event": "delivery_crash", "job_id": str(job.id)})
        finally:
            self.calls -= 1
            if self.ready and self._pump_handle is None:
                self._pump_handle = asyncio.get_running_loop().call_soon(self._pump)
            self.on_done(job)
