"""The claimer: claims due jobs up to the free slots, paced to the database clock's seconds.

Claims take up to the free slots (call slots + prefetch - jobs held, within a memory bound),
up to one poll interval ahead; a claim that took jobs is followed by another as soon as
enough slots are free, an empty one by the idle sleep. It counts what is held until each
job is answered or given back; a give-back pauses the prefetch for a while. After each
claim commits, the batch's secrets and signing keys are loaded on the same thread. A claim
that took all it could leaves the claimer `behind`, and the result writer holds its writes
until a claim comes back short (workers.executor.result_writer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.utils import DatabaseError

from jobs.queue import ClaimedJob, claim_due, due_priorities
from outbound.egress import MAX_URL_LENGTH
from outbound.headers import MAX_TOTAL_BYTES as MAX_HEADER_BYTES
from tasks.request_limits import MAX_BODY_BYTES
from workers.health import Heartbeat
from workers.loop import DATABASE_ERRORS
from workers.metrics import EXECUTOR_CLAIMED, EXECUTOR_HELD

from .clock import DatabaseClock
from .credentials import Credentials
from .db_threads import DatabaseThread
from .tally import Tally

logger = logging.getLogger(__name__)

CLAIM_LEAD_SECONDS = 0.9  # an idle claim starts this long before a whole second (see `idle_seconds`)
CLAIM_JITTER_SECONDS = 0.1  # ... plus up to this much, drawn per sleep
# While it starts (no claim took a job yet, within STARTUP_SECONDS of the first claim the database
# answered), an executor whose claim found nothing due claims again this soon (see `run`).
STARTUP_RETRY_SECONDS = 0.1
STARTUP_SECONDS = 2.0
# After giving a job back (its calls are too slow for what it holds), an executor claims no more than
# its call slots for this long: claimed again at once, those jobs would only wait and go back again.
PREFETCH_PAUSE_SECONDS = 30.0
# One claim takes at most this many jobs (a very large claim outlasted the lead it starts ahead of a
# burst's second); a full claim is followed by the next.
CLAIM_MAX_JOBS = 2000
# The held jobs' requests in memory (ClaimedJob.request_bytes) stay under HELD_REQUEST_BYTES_MAX: a claim
# takes no more jobs than fit if each were as large as the API allows (MAX_REQUEST_BYTES: body, headers,
# URL, as Python keeps them: never more bytes than their UTF-8, plus the objects' own headers).
HELD_REQUEST_BYTES_MAX = 192 * 1024 * 1024
MAX_REQUEST_BYTES = MAX_BODY_BYTES + MAX_HEADER_BYTES + MAX_URL_LENGTH + 1024


def claim_min(held_max: int) -> int:
    """Claim again only when this many slots are free (tiny claims waste the database).

    Half of what may be held: a claim pays once for its walk over the tenants and one take per
    tenant, so its database cost grows with the tenants more than with the jobs. Never more than a
    claim takes (CLAIM_MAX_JOBS): with a large prefetch, an executor stopped claiming ahead of a
    burst's second and claimed the rest under the burst's load while its call slots stood empty.
    """
    return max(1, min(held_max // 2, CLAIM_MAX_JOBS))


@dataclass(kw_only=True, eq=False)
class Claimer:
    """Claim while not stopping; hand each claim to `on_claimed`; `done(job)` frees a held job's slot."""

    worker_id: str
    concurrency: int
    prefetch: int
    poll_seconds: float
    clock: DatabaseClock
    credentials: Credentials
    db: DatabaseThread
    tally: Tally
    on_claimed: Callable[[list[ClaimedJob]], None]
    on_caught_up: Callable[[], None] = lambda: None  # `behind` turned false
    heartbeat: Heartbeat | None = None  # beaten once per poll at least: a blocked event loop stops the beats
    once: bool = False
    held: int = field(default=0, init=False)  # claimed, not answered: parked, waiting for a slot, or in flight
    held_bytes: int = field(default=0, init=False)  # their requests' sizes (ClaimedJob.request_bytes)
    # The last claim took all it could: due jobs may still wait to be claimed (a burst, a backlog).
    # The result writer holds its writes meanwhile, so the database serves the claims first.
    behind: bool = field(default=False, init=False)
    _prefetch_paused_until: float = field(default=0.0, init=False)  # time.monotonic(): PREFETCH_PAUSE_SECONDS
    _starting: bool = field(default=True, init=False)  # see STARTUP_SECONDS
    _starting_until: float | None = field(default=None, init=False)  # time.monotonic(), from the first answered claim
    slots_freed: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    stopping: asyncio.Event = field(default_factory=asyncio.Event, init=False)

    def __post_init__(self) -> None:
        self.held_max = self.concurrency + self.prefetch  # held at most: the calls in flight and the prefetch
        self.claim_min = claim_min(self.held_max)

    def stop(self) -> None:
        """Stop claiming: also wakes a claim loop waiting for free slots (it waits up to a poll)."""
        self.stopping.set()
        self.slots_freed.set()
        self._set_behind(False)

    def _set_behind(self, behind: bool) -> None:
        was, self.behind = self.behind, behind
        if was and not behind:
            self.on_caught_up()

    def paused_prefetch(self) -> None:
        """A job was given back for waiting too long: hold no more than the call slots for a while."""
        self._prefetch_paused_until = time.monotonic() + PREFETCH_PAUSE_SECONDS

    def done(self, job: ClaimedJob) -> None:
        """A held job is answered or given back: one slot more for the claims."""
        self.held -= 1
        self.held_bytes -= job.request_bytes
        # Wake the claim loop only when a claim may follow (or nothing is held, which the drain
        # waits for): a wake per answered job cost one `wait_for` task and timer each.
        if self.held == 0:
            self.slots_freed.set()
            return
        free, worth = self.claim_room()
        if free >= worth:
            self.slots_freed.set()

    async def wait_until_nothing_held(self, until: asyncio.Future[Any] | float) -> None:
        """Until nothing is held, or `until` (a future that ends the wait, or a loop time) comes."""
        loop = asyncio.get_running_loop()
        while self.held > 0:
            self.slots_freed.clear()
            if isinstance(until, float):
                if loop.time() >= until:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.slots_freed.wait(), until - loop.time())
                continue
            if until.done():
                return
            freed = asyncio.ensure_future(self.slots_freed.wait())
            await asyncio.wait([freed, until], return_when=asyncio.FIRST_COMPLETED)
            freed.cancel()
            await asyncio.gather(freed, return_exceptions=True)

    async def run(self) -> None:
        try:
            await self._claim_until_stopped()
        finally:
            self._set_behind(False)  # also when a claim's error or a cancellation ends the loop

    async def _claim_until_stopped(self) -> None:
        while not self.stopping.is_set():
            if self.heartbeat is not None:
                self.heartbeat.beat()
            free, worth = self.claim_room()
            if free < worth:
                self.slots_freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.slots_freed.wait(), self.poll_seconds)
                continue
            try:
                if self.clock.stale():
                    # A few `SELECT NOW(6)` round trips every REFRESH_SECONDS, on the claim's connection.
                    await self.db.call(self.clock.refresh)
                jobs = await self.db.call(
                    self._claim_and_load, worker_id=self.worker_id, limit=free, lookahead_seconds=self.poll_seconds
                )
                nothing_due = False
                if not jobs and not self.once and self._still_starting():
                    nothing_due = not await self.db.call(self._anything_due, lookahead_seconds=self.poll_seconds)
            except DATABASE_ERRORS as exc:
                if self.once:
                    raise
                self._set_behind(False)  # nothing is claimed meanwhile: holding the results buys nothing
                await self._sleep(self.db.unavailable(exc))
                continue
            self.db.answered()
            # A claim under way when the stop came leaves nothing behind: the drain writes at once.
            self._set_behind(bool(jobs) and len(jobs) >= free and not self.stopping.is_set())
            self.held += len(jobs)
            self.held_bytes += sum(job.request_bytes for job in jobs)
            EXECUTOR_HELD.set(self.held)
            self.on_claimed(jobs)
            self.tally.claimed += len(jobs)
            EXECUTOR_CLAIMED.inc(len(jobs))
            if self.once and len(jobs) < free:
                return  # everything due within the lookahead is claimed
            if jobs:
                self._starting = False
            elif nothing_due:
                await self._sleep(min(self.idle_seconds(), STARTUP_RETRY_SECONDS))
            elif self._starting:
                # Starting, with jobs due that the claim did not take: claim once more at once (the
                # scheduler's first jobs may have committed in between); if that finds nothing either,
                # they are a paused or capped tenant's or another executor's, and a soon retry would
                # not take them.
                self._starting = False
            else:
                await self._sleep(self.idle_seconds())  # nothing claimable is due within the lookahead
            # A short claim that took some jobs claims again at once: it is no sign that the lookahead
            # is drained (SKIP LOCKED passed over another executor's rows, or the fair take's rounds
            # ended). Sleeping after one left hundreds of a burst's due jobs waiting up to a second.

    def claim_room(self) -> tuple[int, int]:
        """(jobs the next claim may take, the fewest worth a claim now).

        What may be held: `--concurrency` + `--prefetch` (only `--concurrency` for a while after a
        give-back), and no more than fit in HELD_REQUEST_BYTES_MAX at the largest request size; one
        claim takes at most CLAIM_MAX_JOBS. Worth a claim: `claim_min`, or half of what may be held
        when that is less (the pause, the memory bound), so a claim never waits for the executor to
        empty.
        """
        held_max = self.held_max
        if time.monotonic() < self._prefetch_paused_until:
            held_max = self.concurrency
        room = (HELD_REQUEST_BYTES_MAX - self.held_bytes) // MAX_REQUEST_BYTES
        capacity = min(held_max, self.held + room)
        free = max(0, min(capacity - self.held, CLAIM_MAX_JOBS))
        return free, max(1, min(self.claim_min, capacity // 2))

    def idle_seconds(self) -> float:
        """The idle sleep: the poll interval, cut short so the next claim starts CLAIM_LEAD_SECONDS
        before a whole second of the database's clock (a poll of 1 s or more only).

        Jobs are due on whole seconds (cron). A claim reaching one poll ahead started anywhere from
        0 to 1 s before a burst's second: started just before, it ended after the second, and the
        first call was late by the claim. Aligned, each second's jobs are claimed that long ahead.
        Never longer than the poll, so the claims still cover every job the lookahead reaches.
        """
        poll = self.poll_seconds
        if poll < 1.0 or self.clock.reading is None:
            return poll
        shift = (self.clock.database_time() + poll + CLAIM_LEAD_SECONDS) % 1.0
        # Drawn per sleep: aligned to the same instant, every idle executor claimed at once, and the
        # one whose claim locked a capped tenant's limits first took its whole headroom every second.
        # With 0-0.1 s more, they take turns at random, and the claim still starts 0.8 s or more ahead.
        return min(poll, poll - shift + random.uniform(0.0, CLAIM_JITTER_SECONDS))

    def _still_starting(self) -> bool:
        """Whether an empty claim may be retried soon instead of waiting for the idle sleep.

        An executor usually starts with a scheduler (a deployment, a restart after an outage), and
        that scheduler's first jobs commit a moment after the executor's first claim: the idle sleep
        then kept every job of a cold start waiting for the next aligned claim, up to a second. So
        until a claim takes a job, for STARTUP_SECONDS from the first claim the database answered
        (not from the process's start: an outage at start would use it up), a claim that found
        nothing due is followed by STARTUP_RETRY_SECONDS. Such a claim, and the probe that tells it
        from one that passed over due jobs, are one cheap statement each.
        """
        if not self._starting:
            return False
        now = time.monotonic()
        if self._starting_until is None:
            self._starting_until = now + STARTUP_SECONDS
        if now >= self._starting_until:
            self._starting = False
        return self._starting

    def _anything_due(self, *, lookahead_seconds: float) -> bool:
        """The claim's probe again: is any job due within the lookahead, claimable or not?"""
        return bool(due_priorities(lookahead_seconds=lookahead_seconds))

    def _claim_and_load(self, *, worker_id: str, limit: int, lookahead_seconds: float) -> list[ClaimedJob]:
        """Claim (committed), then load the batch's secrets and signing keys on the same thread, not per job."""
        jobs = claim_due(worker_id=worker_id, limit=limit, lookahead_seconds=lookahead_seconds)
        try:
            self.credentials.load_secrets(jobs)
        except DatabaseError as exc:
            # The claim is committed: these jobs must still fire (a lost secret read fails their attempt,
            # "secret unavailable", and they retry), never vanish until their leases expire.
            connection.close()
            logger.warning("secrets not loaded", extra={"event": "secrets_unavailable", "error": str(exc)})
        self.credentials.load_signing_keys(jobs)
        return jobs

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when a stop is requested."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), max(0.0, seconds))
