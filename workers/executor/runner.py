"""The executor process: claim, park each job on its own timer, fire on its second, record.

One asyncio loop runs the HTTP calls. The database work is blocking
(mysqlclient), so it runs on two single-thread pools, each with its own
connection: one for claims, one for result writes, so a slow write never
delays a claim and the event loop never waits on MySQL.

- Claims: up to the free slots (concurrency + prefetch - jobs held), up to one
  poll interval ahead; a claim that took jobs is followed by another as soon as
  enough slots are free, an empty one by a poll-interval sleep.
- At most `concurrency` calls are in flight; due jobs beyond them wait in
  order for a call slot. One that waited until too little of its lease was left
  for its call is given back (`release_claims`) instead of fired.
- Each claimed job waits on a timer for its `next_attempt_at` on the database's
  clock, mapped to the local monotonic clock by `DatabaseClock` (an offset from
  timed `SELECT NOW(6)` round trips, refreshed every few seconds): worker clock
  skew does not move the fire time, and a job never fires earlier than its
  second minus the estimate's error bound (half the shortest round trip).
- Results queue up and are written in batches behind their fences.
- SIGTERM: stop claiming; due jobs the free call slots cannot take are given back at
  once; parked and in-flight jobs get until the grace period ends (parked ones
  are due within one poll, which is shorter); what has not started by then is
  given back, what is still in flight is cancelled and left to the reconciler
  (its lease expires); queued results are flushed; exit.
- The database dropping mid-run is survived: claims and writes back off (the
  workers' one `ReconnectBackoff` policy) and retry on a fresh connection.
  Nothing fires without a committed claim.
- Stopping uses the workers' `StopFlag` (workers/loop.py), mirrored into an
  asyncio event: a signal, `request_stop()` or a caller's flag all stop it.
- `once` (`run_executor --once`): claim what is due within one poll, fire it,
  wait for every result, exit; any error (the database's included) ends the
  run with `LoopFailed` instead of a retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import resource
import signal
import socket
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db import connection
from django.db.utils import DatabaseError

from jobs.queue import ClaimedJob, JobResult, Outcome, WriteReport, claim_due, record_results, release_claims
from tasks.egress import MAX_URL_LENGTH
from tasks.headers import MAX_TOTAL_BYTES as MAX_HEADER_BYTES
from tasks.serializers import MAX_BODY_BYTES
from workers.health import Heartbeat
from workers.loop import DATABASE_ERRORS, LoopFailed, ReconnectBackoff, StopFlag, describe
from workers.metrics import (
    EXECUTOR_CLAIMED,
    EXECUTOR_FENCE_DROPS,
    EXECUTOR_FIRED,
    EXECUTOR_HELD,
    EXECUTOR_LATENESS,
    EXECUTOR_RELEASED,
    EXECUTOR_RESULTS,
)

from .backoff import retry_after_for
from .clock import DatabaseClock
from .http import DeliveryClient
from .results import decide

logger = logging.getLogger(__name__)

T = TypeVar("T")

RESULT_FLUSH_RESERVE_SECONDS = 5.0
MAX_LATENESS_SAMPLES = 100_000
FIRE_SLICE = 8  # calls started per turn of the event loop when a burst is due (see _start_deliveries)
CLAIM_LEAD_SECONDS = 0.9  # an idle claim starts this long before a whole second (see _idle_seconds)
CLAIM_JITTER_SECONDS = 0.1  # ... plus up to this much, drawn per sleep (see _idle_seconds)
WARM_MIN_SECONDS = 0.02  # a group due sooner is not warmed: its calls would race the warm-up's dials
# claim_mark_running's lease: the job's time (or the claim's, if later) + its timeout + LEASE_SLACK_SECONDS.
# A job waiting for a call slot starts at most START_WITHIN_SECONDS after that time, so its whole call
# (bounded by its timeout) ends 20 s before the lease does, for its result to be written; later, it is
# given back instead.
LEASE_SLACK_SECONDS = 30.0
START_WITHIN_SECONDS = LEASE_SLACK_SECONDS - 20.0
EXPIRE_CHECK_SECONDS = 1.0  # how often jobs waiting for a call slot are checked against that bound
# After giving a job back (its calls are too slow for what it holds), an executor claims no more than
# its call slots for this long: claimed again at once, those jobs would only wait and go back again.
PREFETCH_PAUSE_SECONDS = 30.0
# One claim takes at most this many jobs: a claim of 10,000 outlasted the 0.9 s it starts ahead of a
# burst's second in `make bench` (the first call 0.14-0.18 s late); a full claim is followed by the next.
CLAIM_MAX_JOBS = 2000
# The held jobs' requests in memory (ClaimedJob.request_bytes) stay under HELD_REQUEST_BYTES_MAX: a claim
# takes no more jobs than fit if each were as large as the API allows (MAX_REQUEST_BYTES: body, headers,
# URL, as Python keeps them: never more bytes than their UTF-8, plus the objects' own headers).
HELD_REQUEST_BYTES_MAX = 192 * 1024 * 1024
MAX_REQUEST_BYTES = MAX_BODY_BYTES + MAX_HEADER_BYTES + MAX_URL_LENGTH + 1024


def default_worker_id() -> str:
    """The pod (host) name and pid: unique per process, readable in the jobs table."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class ExecutorConfig:
    worker_id: str
    concurrency: int = 200  # calls in flight at once
    # Jobs held beyond the calls in flight: claimed ahead and parked, or due and waiting for a call slot.
    prefetch: int = 0
    poll_seconds: float = 1.0  # the idle sleep between claims, and how far ahead a claim reaches
    grace_seconds: float = 30.0
    result_batch_max: int = 500
    result_flush_seconds: float = 0.1  # bigger batches cost the database less per result
    # Open a parked group's connections this long before its second (0: never; see DeliveryClient.warm).
    # 0.25 s was too short on a loaded machine: 500 dials outlasted it and delayed the second's timer.
    warm_seconds: float = 0.5
    metrics_every_seconds: float = 10.0
    once: bool = False  # claim what is due within one poll, fire it, wait for the results, exit

    @property
    def held_max(self) -> int:
        """Jobs held at most: the calls in flight and the prefetch."""
        return self.concurrency + self.prefetch

    @property
    def claim_min(self) -> int:
        """Claim again only when this many slots are free (tiny claims waste the database).

        Half of them: a claim pays once for its walk over the tenants and one take per tenant, so its
        database cost grows with the tenants more than with the jobs. One process claiming 30,000 due
        jobs of 100 tenants and writing their results cost the server 223 us of CPU per job with claims
        of 500 against 272 us with claims of 250 (a quarter of the slots was the threshold before).
        Never more than a claim takes (CLAIM_MAX_JOBS): with a large prefetch, an executor holding 6,000
        of 10,500 stopped claiming 0.26 s before a burst's second, and claimed the rest under the
        burst's load, 2,000 per 0.55-1.1 s, while its call slots stood empty.
        """
        return max(1, min(self.held_max // 2, CLAIM_MAX_JOBS))


COUNTERS = ("claimed", "fired", "succeeded", "retried", "dead", "dropped", "released", "warmed")


@dataclass
class Metrics:
    claimed: int = 0
    fired: int = 0
    succeeded: int = 0
    retried: int = 0
    dead: int = 0
    dropped: int = 0
    released: int = 0  # claims given back, never called (release_claims)
    warmed: int = 0  # connections held open ahead of a parked group's second (DeliveryClient.warm)
    lateness: list[float] = field(default_factory=list)

    def add(self, other: Metrics) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.lateness.extend(other.lateness)
        del self.lateness[:-MAX_LATENESS_SAMPLES]  # a long-running process keeps the recent ones

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in COUNTERS}
        if self.lateness:
            ordered = sorted(self.lateness)
            middle = len(ordered) // 2  # the median of the list sorted once (statistics.median sorts again)
            p50 = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
            out["lateness_p50"] = round(p50, 3)
            out["lateness_p95"] = round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3)
            out["lateness_max"] = round(ordered[-1], 3)
        return out


def _failure(task: asyncio.Task[None]) -> BaseException | None:
    """The error a finished task ended with (None while running, cancelled or clean)."""
    if not task.done() or task.cancelled():
        return None
    return task.exception()


def _start_by(job: ClaimedJob) -> float:
    """The latest database time at which `job` may start its call: early enough that the call, bounded
    by the job's timeout, ends well before its lease (`claim_mark_running`) does."""
    # due_in < 0: claimed after its time, and the lease runs from the claim's NOW(3).
    return job.next_attempt_at.timestamp() + max(0.0, -job.due_in) + START_WITHIN_SECONDS


def _in_db_thread(fn: Callable[..., T], **kwargs: Any) -> T:
    """Run on a DB pool thread; a dropped connection is closed so the next call reconnects."""
    try:
        return fn(**kwargs)
    except DATABASE_ERRORS:
        connection.close()
        raise


class Executor:
    """One executor process; `await run()` until stopped (SIGTERM, `request_stop` or `stop.set()`)."""

    def __init__(
        self,
        config: ExecutorConfig,
        *,
        client: DeliveryClient,
        stop: StopFlag | None = None,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.stop = stop or StopFlag()
        self.heartbeat = heartbeat  # /healthz on --metrics-port: beaten by the claim loop, fed by both DB loops
        self.metrics = Metrics()
        self.totals = Metrics()
        self._held = 0  # claimed jobs not yet answered: parked on a timer, waiting for a call slot, or in flight
        self._held_bytes = 0  # their requests' sizes (ClaimedJob.request_bytes)
        self._prefetch_paused_until = 0.0  # time.monotonic(): see PREFETCH_PAUSE_SECONDS
        self._timers: dict[object, tuple[asyncio.Handle, list[ClaimedJob]]] = {}  # parked
        self._parked_at: dict[datetime, object] = {}  # a due instant's timer (its `_timers` key), until it fires
        self._ready: deque[ClaimedJob] = deque()  # due, waiting for a call slot (in order)
        self._pump_handle: asyncio.Handle | None = None  # the next turn's `_pump`, when one is due
        self._calls = 0  # calls in flight (counted here: `_inflight` loses a task only after its finally)
        self._inflight: set[asyncio.Task[None]] = set()
        self._warming: set[asyncio.Task[None]] = set()  # DeliveryClient.warm for a parked group
        self._warm_timers: dict[object, asyncio.TimerHandle] = {}  # keyed as `_timers`
        self._results: list[JobResult] = []
        self._releases: list[ClaimedJob] = []  # claims to give back
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._slots_freed: asyncio.Event | None = None
        self._results_ready: asyncio.Event | None = None
        self._writer_closing = False
        # Refreshed on the claim thread, read on the event loop: a reading is replaced whole (one assignment).
        self.clock = DatabaseClock()
        self._claim_backoff = ReconnectBackoff()
        self._result_backoff = ReconnectBackoff()
        self._claim_pool = ThreadPoolExecutor(1, thread_name_prefix="executor-claims")
        self._result_pool = ThreadPoolExecutor(1, thread_name_prefix="executor-results")

    # -- control ---------------------------------------------------------------

    def request_stop(self) -> None:
        """Stop claiming and wind down; safe from any thread or a signal handler."""
        self.stop.set()

    def install_signal_handlers(self) -> None:
        assert self._loop is not None
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._loop.add_signal_handler(signum, self._on_signal, signum)

    def _on_signal(self, signum: int) -> None:
        self.stop.signal_name = signal.Signals(signum).name
        logger.info("stop requested", extra={"event": "stop_requested", "signal": self.stop.signal_name})
        self.stop.set()

    # -- the process -----------------------------------------------------------

    async def run(self, *, install_signals: bool = False, started: Callable[[], None] | None = None) -> Metrics:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._slots_freed = asyncio.Event()
        self._results_ready = asyncio.Event()
        loop = self._loop

        def mirror_stop() -> None:
            # Set from a signal handler or another thread: hand it to the event loop.
            loop.call_soon_threadsafe(self._begin_stop)

        self.stop.add_listener(mirror_stop)
        if install_signals:
            self.install_signal_handlers()
        logger.info(
            "executor started",
            extra={
                "event": "start",
                "worker_id": self.config.worker_id,
                "concurrency": self.config.concurrency,
                "prefetch": self.config.prefetch,
                "poll_seconds": self.config.poll_seconds,
                "grace_seconds": self.config.grace_seconds,
                "once": self.config.once,
            },
        )
        claimer = asyncio.create_task(self._claim_loop())
        writer = asyncio.create_task(self._result_writer())
        reporter = asyncio.create_task(self._report_loop())
        expirer = asyncio.create_task(self._expire_loop())
        if started is not None:
            started()
        crashed: BaseException | None = None
        try:
            stop_waiter = asyncio.ensure_future(self._stopping.wait())
            await asyncio.wait([stop_waiter, claimer, writer, expirer], return_when=asyncio.FIRST_COMPLETED)
            if self.config.once and claimer.done() and _failure(claimer) is None and not writer.done():
                # Everything due is claimed: wait for those jobs (a stop still cuts this to the grace period).
                await self._wait_until_nothing_held(stop_waiter)
            stop_waiter.cancel()
            await asyncio.gather(stop_waiter, return_exceptions=True)  # no task left pending
            crashed = self._crash(claimer, writer, expirer)
            self._begin_stop()
            if not claimer.done():
                await asyncio.wait([claimer])  # it finishes the claim in progress, so no committed claim is lost
            await self._drain(self._loop.time() + self.config.grace_seconds)
            self._writer_closing = True
            self._results_ready.set()
            if not writer.done():
                await asyncio.wait([writer], timeout=RESULT_FLUSH_RESERVE_SECONDS)
            if not writer.done():
                logger.error(
                    "results not written before exit; the reconciler will return these jobs",
                    extra={
                        "event": "results_abandoned",
                        "results": len(self._results),
                        "releases": len(self._releases),
                    },
                )
        finally:
            reporter.cancel()
            expirer.cancel()
            for task in (claimer, writer, reporter):
                if not task.done():
                    task.cancel()
            await asyncio.gather(claimer, writer, reporter, expirer, return_exceptions=True)
            self.stop.remove_listener(mirror_stop)
            await self._stop_warming()
            await self.client.aclose()
            await self._close_db_threads()
            self._flush_metrics()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu = usage.ru_utime + usage.ru_stime
            logger.info(
                "executor stopped",
                extra={
                    "event": "stop",
                    "worker_id": self.config.worker_id,
                    "cpu_seconds": round(cpu, 3),
                    "cpu_ms_per_fired": round(1000 * cpu / self.totals.fired, 3) if self.totals.fired else None,
                    **self.totals.fields(),
                },
            )
        crashed = crashed or self._crash(claimer, writer, expirer)
        if crashed is not None:
            raise LoopFailed(f"executor: {describe(crashed)}") from crashed
        return self.totals

    def _begin_stop(self) -> None:
        """Stop claiming: also wakes a claim loop waiting for free slots (it waits up to a poll)."""
        assert self._stopping is not None and self._slots_freed is not None
        self._stopping.set()
        self._slots_freed.set()

    def _crash(self, *tasks: asyncio.Task[None]) -> BaseException | None:
        """The first loop that died of an error, logged: a bug (the database is retried), or any error once."""
        for task in tasks:
            error = _failure(task)
            if error is not None:
                # A deployment logs the traceback and exits non-zero to be restarted; `--once` reports one line.
                logger.error(
                    "executor loop crashed",
                    exc_info=None if self.config.once else error,
                    extra={"event": "crash", "error": describe(error)},
                )
                return error
        return None

    async def _wait_until_nothing_held(self, stop_waiter: asyncio.Future[Any]) -> None:
        assert self._slots_freed is not None
        while self._held > 0 and not stop_waiter.done():
            self._slots_freed.clear()
            freed = asyncio.ensure_future(self._slots_freed.wait())
            await asyncio.wait([freed, stop_waiter], return_when=asyncio.FIRST_COMPLETED)
            freed.cancel()
            await asyncio.gather(freed, return_exceptions=True)

    async def _stop_warming(self) -> None:
        for handle in self._warm_timers.values():
            handle.cancel()
        self._warm_timers.clear()
        for task in self._warming:
            task.cancel()
        await asyncio.gather(*self._warming, return_exceptions=True)

    async def _close_db_threads(self) -> None:
        loop = asyncio.get_running_loop()
        for pool in (self._claim_pool, self._result_pool):
            with contextlib.suppress(Exception):
                await loop.run_in_executor(pool, connection.close)
            pool.shutdown(wait=False)

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when a stop is requested."""
        assert self._stopping is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), max(0.0, seconds))

    # -- claiming --------------------------------------------------------------

    async def _claim_loop(self) -> None:
        assert self._loop is not None and self._stopping is not None and self._slots_freed is not None
        config = self.config
        while not self._stopping.is_set():
            if self.heartbeat is not None:
                self.heartbeat.beat()  # once per poll at least: a blocked event loop stops the beats
            free, worth = self._claim_room()
            if free < worth:
                self._slots_freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._slots_freed.wait(), config.poll_seconds)
                continue
            try:
                if self.clock.stale():
                    # A few `SELECT NOW(6)` round trips every REFRESH_SECONDS, on the claim's connection.
                    await self._loop.run_in_executor(
                        self._claim_pool, functools.partial(_in_db_thread, self.clock.refresh)
                    )
                jobs = await self._loop.run_in_executor(
                    self._claim_pool,
                    functools.partial(
                        _in_db_thread,
                        self._claim_and_load_secrets,
                        worker_id=config.worker_id,
                        limit=free,
                        lookahead_seconds=config.poll_seconds,
                    ),
                )
            except DATABASE_ERRORS as exc:
                if config.once:
                    raise
                await self._sleep(self._db_unavailable(self._claim_backoff, exc, "claims"))
                continue
            self._claim_backoff.reset()
            self._database_answered()
            self._park(jobs)
            self.metrics.claimed += len(jobs)
            EXECUTOR_CLAIMED.inc(len(jobs))
            if config.once and len(jobs) < free:
                return  # everything due within the lookahead is claimed
            if not jobs:
                await self._sleep(self._idle_seconds())  # nothing claimable is due within the lookahead
            # A short claim that took some jobs claims again at once: it is no sign that the lookahead
            # is drained (SKIP LOCKED passed over another executor's rows, or the fair take's rounds
            # ended). Sleeping after one (until 0.9 s before the next second) left hundreds of due jobs
            # waiting in the middle of a burst: `make bench`'s last call came up to a second later.

    def _claim_room(self) -> tuple[int, int]:
        """(jobs the next claim may take, the fewest worth a claim now).

        What may be held: `--concurrency` + `--prefetch` (only `--concurrency` for a while after a
        give-back), and no more than fit in HELD_REQUEST_BYTES_MAX at the largest request size; one
        claim takes at most CLAIM_MAX_JOBS. Worth a claim: `claim_min`, or half of what may be held
        when that is less (the pause, the memory bound), so a claim never waits for the executor to
        empty.
        """
        held_max = self.config.held_max
        if time.monotonic() < self._prefetch_paused_until:
            held_max = self.config.concurrency
        room = (HELD_REQUEST_BYTES_MAX - self._held_bytes) // MAX_REQUEST_BYTES
        capacity = min(held_max, self._held + room)
        free = max(0, min(capacity - self._held, CLAIM_MAX_JOBS))
        return free, max(1, min(self.config.claim_min, capacity // 2))

    def _idle_seconds(self) -> float:
        """The idle sleep: the poll interval, cut short so the next claim starts CLAIM_LEAD_SECONDS
        before a whole second of the database's clock (a poll of 1 s or more only).

        Jobs are due on whole seconds (cron). A claim reaching one poll ahead started anywhere from
        0 to 1 s before a burst's second, as the executor's start and the claims' durations left it:
        started just before, it ended after the second, and the first call was late by the claim.
        Aligned, each second's jobs are claimed that long ahead. Never longer than the poll, so
        the claims still cover every job the lookahead reaches.
        """
        poll = self.config.poll_seconds
        if poll < 1.0 or self.clock.reading is None:
            return poll
        shift = (self.clock.database_time() + poll + CLAIM_LEAD_SECONDS) % 1.0
        # Drawn per sleep: aligned to the same instant, every idle executor claimed at once, and the
        # one whose claim locked a capped tenant's limits first took its whole headroom every second
        # (the others counted it full): one executor ran all of that tenant's jobs. With 0-0.1 s
        # more, they take turns at random, and the claim still starts 0.8 s or more ahead.
        return min(poll, poll - shift + random.uniform(0.0, CLAIM_JITTER_SECONDS))

    def _claim_and_load_secrets(self, **claim: Any) -> list[ClaimedJob]:
        """Claim (committed), then resolve the batch's secrets and signing keys on the same thread, not per job."""
        jobs = claim_due(**claim)
        try:
            self.client.prefetch_secrets(jobs)
        except DatabaseError as exc:
            # The claim is committed: these jobs must still fire (a lost secret read fails their attempt,
            # "secret unavailable", and they retry), never vanish until their leases expire.
            connection.close()
            logger.warning("secrets not loaded", extra={"event": "secrets_unavailable", "error": str(exc)})
        self.client.prepare(jobs)  # signing keys; never raises (a failed load fails those attempts instead)
        return jobs

    def _park(self, jobs: list[ClaimedJob]) -> None:
        """Put each job on a timer for its second; jobs due at the same instant share one, across claims.

        Shared across claims, so a burst's jobs start in the order they were claimed: with one timer
        per claim, the timers of one instant fired in the loop's order (uvloop rounds each to its
        millisecond, and one woken early is armed again), and the first claim's jobs, where the
        fair claim puts the small tenants', could start behind 8,000 others (0.23 s late).
        """
        assert self._loop is not None
        self._held += len(jobs)
        self._held_bytes += sum(job.request_bytes for job in jobs)
        EXECUTOR_HELD.set(self._held)
        groups: dict[datetime, list[ClaimedJob]] = {}
        for job in jobs:
            groups.setdefault(job.next_attempt_at, []).append(job)
        for due, group in groups.items():
            parked = self._parked_at.get(due)
            if parked is not None:
                self._timers[parked][1].extend(group)  # the timer's own list: it fires them all
                if (
                    self.config.warm_seconds > 0
                    and parked not in self._warm_timers  # its warm-up began: it counted the jobs it had
                    and self.clock.local_time(due) - time.monotonic() > WARM_MIN_SECONDS
                ):
                    self._warm(object(), group, self.clock.local_time(due))
                continue
            key = object()
            # The database clock's `due` on the local clock (early by at most the estimate's error bound),
            # not the claim's NOW(3) plus its duration: under a burst that wait was most of the lateness.
            at = self.clock.local_time(due)
            wait = at - time.monotonic()
            handle = self._loop.call_later(max(0.0, wait), self._fire, key, group, at, due)
            self._timers[key] = (handle, group)
            self._parked_at[due] = key
            if self.config.warm_seconds > 0 and wait > WARM_MIN_SECONDS:
                # Only jobs already claimed, and only while they wait: a group due now dials as it fires.
                delay = max(0.0, wait - self.config.warm_seconds)
                self._warm_timers[key] = self._loop.call_later(delay, self._warm, key, group, at)

    def _warm(self, key: object, group: list[ClaimedJob], at: float) -> None:
        """Open the group's connections before its second (DeliveryClient.warm: bounded, vetted)."""
        assert self._loop is not None
        self._warm_timers.pop(key, None)
        task = self._loop.create_task(self._warm_group(group, at))
        self._warming.add(task)
        task.add_done_callback(self._warming.discard)

    async def _warm_group(self, group: list[ClaimedJob], at: float) -> None:
        try:
            warmed = await self.client.warm(group, within=at - time.monotonic())
            self.metrics.warmed += warmed  # after the await: the metrics window may have been flushed meanwhile
        except Exception:
            # Only a head start is lost: the calls dial (through the same check) as they fire.
            logger.exception("warming connections failed", extra={"event": "warm_crash", "jobs": len(group)})

    def _fire(self, key: object, group: list[ClaimedJob], at: float, due: datetime) -> None:
        assert self._loop is not None
        early = at - time.monotonic()
        if early > 0:
            # A loop whose timers run on a coarser, cached clock (uvloop: milliseconds) can wake early.
            self._timers[key] = (self._loop.call_later(early, self._fire, key, group, at, due), group)
            return
        self._timers.pop(key, None)
        self._parked_at.pop(due, None)
        self._start_deliveries(group)

    def _start_deliveries(self, jobs: list[ClaimedJob]) -> None:
        """Queue due jobs for a call slot, and start what the free slots allow (`_pump`).

        While stopping, the jobs beyond the free call slots are given back at once.
        """
        assert self._stopping is not None
        self._ready.extend(jobs)
        if self._stopping.is_set():
            self._give_back_beyond_free_slots()
        if self._pump_handle is None:
            self._pump()

    def _give_back_beyond_free_slots(self) -> None:
        """Give back the waiting jobs the free call slots cannot take now (the latest first)."""
        while len(self._ready) > max(0, self.config.concurrency - self._calls):
            self._release(self._ready.pop())

    def _pump(self) -> None:
        """Start up to FIRE_SLICE due jobs now, within the free call slots; the rest on the next turns.

        A task's first step (headers, the request's set-up, a connect) runs before
        any socket event is read: 500 started at once put the first request on the wire
        only after all 500 first steps. In slices, the first calls leave at once. A cold
        connection needs a few turns (connect, then send), and every turn also starts a
        slice, so slices are small: 25 per turn still held a loaded machine's first call
        0.34 s (the executor had started 125 by then); the extra turns cost one select each.
        A job that waits for a slot past `_start_by` is given back by `_expire_loop` instead.
        """
        assert self._loop is not None
        self._pump_handle = None
        room = min(FIRE_SLICE, self.config.concurrency - self._calls)
        if room <= 0 or not self._ready:
            return
        database_now = self.clock.database_time()
        started = 0
        while started < room and self._ready:
            job = self._ready.popleft()
            # Lateness on the database clock, from the job's scheduled second (retries count their wait).
            late = max(0.0, database_now - job.scheduled_at.timestamp())
            self.metrics.lateness.append(late)
            EXECUTOR_LATENESS.observe(late)
            self._calls += 1
            task = self._loop.create_task(self._deliver(job))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
            started += 1
        self.metrics.fired += started
        EXECUTOR_FIRED.inc(started)
        if self._ready and self._calls < self.config.concurrency:
            self._pump_handle = self._loop.call_soon(self._pump)

    def _release(self, job: ClaimedJob, *, slow: bool = False) -> None:
        """Drop a job that was never called and queue its claim to be given back (by the result writer).

        `slow`: it waited too long for a call slot; the prefetch pauses (PREFETCH_PAUSE_SECONDS).
        """
        assert self._results_ready is not None
        if slow:
            self._prefetch_paused_until = time.monotonic() + PREFETCH_PAUSE_SECONDS
        self._releases.append(job)
        self._results_ready.set()
        self.metrics.released += 1
        self._job_done(job)

    def _job_done(self, job: ClaimedJob) -> None:
        """A held job is answered or given back: one slot more for the claims."""
        assert self._slots_freed is not None
        self._held -= 1
        self._held_bytes -= job.request_bytes
        # Wake the claim loop only when a claim may follow (or nothing is held, which the drain
        # waits for): a wake per answered job cost one `wait_for` task and timer each.
        if self._held == 0:
            self._slots_freed.set()
            return
        free, worth = self._claim_room()
        if free >= worth:
            self._slots_freed.set()

    async def _expire_loop(self) -> None:
        """Every EXPIRE_CHECK_SECONDS, give back the jobs that waited for a call slot past `_start_by`.

        Only here, not as each call starts (the hot path): the bound leaves 20 s before the lease ends,
        so a call started up to a check late still ends well before it.
        """
        while True:
            await asyncio.sleep(EXPIRE_CHECK_SECONDS)
            if not self._ready:
                continue
            database_now = self.clock.database_time()
            kept: deque[ClaimedJob] = deque()
            expired: list[ClaimedJob] = []
            for job in self._ready:
                (expired if database_now > _start_by(job) else kept).append(job)
            self._ready = kept
            for job in expired:
                self._release(job, slow=True)

    async def _deliver(self, job: ClaimedJob) -> None:
        assert self._slots_freed is not None and self._results_ready is not None
        try:
            began = time.monotonic()
            delivery = await self.client.send(job)
            result = decide(
                job_id=job.id,
                fence=job.fence,
                attempt=job.attempt,
                max_attempts=job.max_attempts,
                backoff_base_seconds=job.backoff_base_seconds,
                http_status=delivery.http_status,
                error=delivery.error,
                response_body=delivery.response_body,
                duration_ms=round((time.monotonic() - began) * 1000),
                retry_after_seconds=retry_after_for(delivery.http_status, delivery.retry_after, now=datetime.now(UTC)),
            )
            self._results.append(result)
            self._results_ready.set()
        except Exception:
            # No result is written: the lease expires and the reconciler returns the job.
            logger.exception("delivery failed unexpectedly", extra={"event": "delivery_crash", "job_id": str(job.id)})
        finally:
            self._calls -= 1
            if self._ready and self._pump_handle is None:
                assert self._loop is not None
                self._pump_handle = self._loop.call_soon(self._pump)
            self._job_done(job)

    # -- shutting down ----------------------------------------------------------

    async def _drain(self, deadline: float) -> None:
        """Let parked and in-flight jobs finish until `deadline`; cancel the rest."""
        assert self._loop is not None and self._slots_freed is not None
        logger.info("draining", extra={"event": "drain", "held": self._held, "worker_id": self.config.worker_id})
        # Due jobs the free call slots cannot take go back at once: another executor may have free slots.
        self._give_back_beyond_free_slots()
        while self._held > 0 and self._loop.time() < deadline:
            self._slots_freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slots_freed.wait(), deadline - self._loop.time())
        if self._held == 0:
            return
        # Past the grace period. Jobs never called (parked, or waiting for a call slot) are given back;
        # calls in flight stay 'running' until their leases expire, then the reconciler returns them
        # (the attempt is counted: the call may have reached the receiver).
        not_started = [job for _, group in self._timers.values() for job in group] + list(self._ready)
        for key, (handle, _) in self._timers.items():
            handle.cancel()
            warm = self._warm_timers.pop(key, None)
            if warm is not None:
                warm.cancel()
        self._timers.clear()
        self._parked_at.clear()
        self._ready.clear()
        if self._pump_handle is not None:
            self._pump_handle.cancel()
            self._pump_handle = None
        for job in not_started:
            self._release(job)
        abandoned = len(self._inflight)
        for task in list(self._inflight):
            task.cancel()
        await asyncio.gather(*self._inflight, return_exceptions=True)
        logger.warning(
            "grace period over; unfinished jobs left to the reconciler",
            extra={
                "event": "abandoned",
                "jobs": abandoned,
                "released": len(not_started),
                "worker_id": self.config.worker_id,
            },
        )

    # -- results ----------------------------------------------------------------

    async def _result_writer(self) -> None:
        assert self._loop is not None and self._results_ready is not None
        config = self.config
        while True:
            if self._releases:
                await self._write_releases()
            if not self._results:
                if self._writer_closing and not self._releases:
                    return
                if not self._releases:
                    self._results_ready.clear()
                    await self._results_ready.wait()
                continue
            if len(self._results) < config.result_batch_max and not self._writer_closing:
                await asyncio.sleep(config.result_flush_seconds)  # gather results finishing together
            batch = self._results[: config.result_batch_max]
            del self._results[: config.result_batch_max]
            try:
                report: WriteReport = await self._loop.run_in_executor(
                    self._result_pool,
                    functools.partial(_in_db_thread, record_results, worker_id=config.worker_id, results=batch),
                )
            except DATABASE_ERRORS as exc:
                if config.once:
                    raise  # unwritten results: their leases expire and the reconciler returns the jobs
                # Retry the batch. If the lost reply hid a commit, or the lease ran out meanwhile,
                # the fence drops the repeat (counted as dropped), which is right.
                self._results[:0] = batch
                await asyncio.sleep(
                    self._db_unavailable(self._result_backoff, exc, "results", results=len(self._results))
                )
                continue
            self._result_backoff.reset()
            self._database_answered()
            EXECUTOR_HELD.set(self._held)  # per batch, not per answered job
            outcomes = Counter(result.outcome for result in report.written)
            for outcome, count in outcomes.items():
                EXECUTOR_RESULTS.labels(outcome.value).inc(count)  # per batch: `labels()` is a locked lookup
            self.metrics.succeeded += outcomes[Outcome.SUCCEEDED]
            self.metrics.retried += outcomes[Outcome.RETRY]
            self.metrics.dead += outcomes[Outcome.DEAD]
            for result in report.written:
                if result.outcome is Outcome.SUCCEEDED:
                    continue
                # One line per failed attempt, once its result is recorded (a dropped one is logged by the fence).
                logger.info(
                    "attempt failed",
                    extra={
                        "event": "attempt_failed",
                        "job_id": str(result.job_id),
                        "attempt": result.attempt,
                        "outcome": result.outcome.value,
                        "http_status": result.http_status,
                        "error": result.error,
                        "retry_in": result.delay_seconds,
                    },
                )
            self.metrics.dropped += len(report.dropped)
            EXECUTOR_FENCE_DROPS.inc(len(report.dropped))

    async def _write_releases(self) -> None:
        """Give back the queued claims (one statement, never sent twice).

        A statement that failed may have committed before its answer was lost, and the claim's
        `attempt + 1` it undid may since have been taken again, by this executor too: sent again, it
        would give back that new claim while its call runs. So a failed give-back is not retried:
        those jobs stay claimed until their leases expire, and the reconciler takes them back (their
        attempt counted, as after a crash).
        """
        assert self._loop is not None
        releases, self._releases = self._releases, []
        try:
            released = await self._loop.run_in_executor(
                self._result_pool,
                functools.partial(_in_db_thread, release_claims, worker_id=self.config.worker_id, jobs=releases),
            )
        except DATABASE_ERRORS as exc:
            if self.config.once:
                raise  # unreleased claims: their leases expire and the reconciler returns the jobs
            if self.heartbeat is not None:
                self.heartbeat.database_failed()
            logger.warning(
                "claims not given back; left to the reconciler",
                extra={
                    "event": "release_failed",
                    "worker_id": self.config.worker_id,
                    "jobs": len(releases),
                    "error": describe(exc),
                },
            )
            return
        self._database_answered()
        EXECUTOR_RELEASED.inc(released)
        # Fewer than asked: the reconciler had taken those back already (their leases had expired).
        logger.info(
            "claims given back",
            extra={
                "event": "claims_released",
                "worker_id": self.config.worker_id,
                "jobs": len(releases),
                "released": released,
            },
        )

    def _db_unavailable(self, backoff: ReconnectBackoff, exc: BaseException, what: str, **extra: Any) -> float:
        """Log a dropped database and return the next wait (the workers' one backoff policy)."""
        if self.heartbeat is not None:
            self.heartbeat.database_failed()
        delay = backoff.next_delay()
        logger.warning(
            f"database unavailable for {what}, retrying",
            extra={
                "event": "db_unavailable",
                "worker_id": self.config.worker_id,
                "retry_in": round(delay, 3),
                "failures": backoff.failures,
                "error": describe(exc),
                **extra,
            },
        )
        return delay

    def _database_answered(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.database_answered()

    # -- metrics ----------------------------------------------------------------

    async def _report_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.metrics_every_seconds)
            self._flush_metrics()

    def _flush_metrics(self) -> None:
        EXECUTOR_HELD.set(self._held)
        window, self.metrics = self.metrics, Metrics()
        self.totals.add(window)
        if any(getattr(window, name) for name in COUNTERS):
            logger.info(
                "executor metrics",
                extra={
                    "event": "metrics",
                    "worker_id": self.config.worker_id,
                    "held": self._held,
                    "at": round(time.time(), 3),
                    **window.fields(),
                },
            )
