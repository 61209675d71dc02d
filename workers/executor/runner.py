"""The executor process: its parts along a job's path, composed, started and stopped together.

claim (`claimer.Claimer`) → park until its second (`timetable.Timetable`) → call within
the free slots (`call_slots.CallSlots`) → write the result behind its fence
(`result_writer.ResultWriter`). One asyncio loop runs the calls; the claims and the result
writes each run on a database thread of their own (`db_threads.DatabaseThread`).

- SIGTERM: stop claiming; due jobs the free call slots cannot take are given back at
  once; parked and in-flight jobs get until the grace period ends (parked ones are due
  within one poll, which is shorter); what has not started by then is given back, what is
  still in flight is cancelled and left to the reconciler (its lease expires); queued
  results are flushed; exit.
- The database dropping mid-run is survived: claims and writes back off (the workers' one
  `ReconnectBackoff` policy) and retry on a fresh connection. Nothing fires without a
  committed claim.
- Stopping uses the workers' `StopFlag` (workers/loop.py), mirrored into the event loop:
  a signal, `request_stop()` or a caller's flag all stop it.
- `once` (`run_executor --once`): claim what is due within one poll, fire it, wait for
  every result, exit; any error (the database's included) ends the run with `LoopFailed`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from jobs.queue import ClaimedJob
from outbound.client import DeliveryClient
from workers.health import Heartbeat
from workers.loop import LoopFailed, StopFlag, describe
from workers.metrics import EXECUTOR_HELD

from .call_slots import CallSlots
from .claimer import Claimer, claim_min
from .clock import DatabaseClock
from .credentials import Credentials
from .db_threads import DatabaseThread
from .result_writer import ResultWriter
from .tally import COUNTERS, Tally
from .timetable import Timetable

logger = logging.getLogger(__name__)

RESULT_FLUSH_RESERVE_SECONDS = 5.0  # after the grace period, for the queued results to be written


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
    warm_seconds: float = 0.5
    metrics_every_seconds: float = 10.0
    once: bool = False  # claim what is due within one poll, fire it, wait for the results, exit

    @property
    def held_max(self) -> int:
        """Jobs held at most: the calls in flight and the prefetch."""
        return self.concurrency + self.prefetch

    @property
    def claim_min(self) -> int:
        """The fewest free slots worth a claim (`claimer.claim_min`)."""
        return claim_min(self.held_max)


def _failure(task: asyncio.Task[None]) -> BaseException | None:
    """The error a finished task ended with (None while running, cancelled or clean)."""
    if not task.done() or task.cancelled():
        return None
    return task.exception()


class Executor:
    """One executor process; `await run()` until stopped (SIGTERM, `request_stop` or `stop.set()`)."""

    def __init__(
        self,
        config: ExecutorConfig,
        *,
        client: DeliveryClient,
        credentials: Credentials | None = None,
        stop: StopFlag | None = None,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.credentials = credentials or Credentials()
        self.stop = stop or StopFlag()
        self.heartbeat = heartbeat  # /healthz on --metrics-port: beaten by the claimer, fed by both DB threads
        self.tally = Tally()  # the current window, which every part adds to
        self.totals = Tally()
        # Refreshed on the claim thread, read on the event loop: a reading is replaced whole (one assignment).
        self.clock = DatabaseClock()
        self.claimer: Claimer | None = None
        self.timetable: Timetable | None = None
        self.slots: CallSlots | None = None
        self.writer: ResultWriter | None = None
        self._give_back: Callable[[ClaimedJob, bool], None] = lambda job, slow: None  # set by _build
        self._databases: tuple[DatabaseThread, ...] = ()

    def request_stop(self) -> None:
        """Stop claiming and wind down; safe from any thread or a signal handler."""
        self.stop.set()

    def _on_signal(self, signum: int) -> None:
        self.stop.signal_name = signal.Signals(signum).name
        logger.info("stop requested", extra={"event": "stop_requested", "signal": self.stop.signal_name})
        self.stop.set()

    def _build(self) -> tuple[Claimer, Timetable, CallSlots, ResultWriter]:
        """The parts, wired along a job's path (built inside the running loop: they hold its events)."""
        config = self.config
        claims_db = DatabaseThread("claims", worker_id=config.worker_id, heartbeat=self.heartbeat)
        results_db = DatabaseThread("results", worker_id=config.worker_id, heartbeat=self.heartbeat)
        writer = ResultWriter(
            worker_id=config.worker_id,
            db=results_db,
            tally=self.tally,
            batch_max=config.result_batch_max,
            flush_seconds=config.result_flush_seconds,
            behind=lambda: claimer.behind,
            once=config.once,
        )
        claimer = Claimer(
            worker_id=config.worker_id,
            concurrency=config.concurrency,
            prefetch=config.prefetch,
            poll_seconds=config.poll_seconds,
            clock=self.clock,
            credentials=self.credentials,
            db=claims_db,
            tally=self.tally,
            on_claimed=lambda jobs: timetable.park(jobs),
            on_caught_up=writer.caught_up,
            heartbeat=self.heartbeat,
            once=config.once,
        )

        def give_back(job: ClaimedJob, slow: bool) -> None:
            """Drop a job that was never called; its claim goes back (by the result writer)."""
            if slow:
                claimer.paused_prefetch()
            writer.give_back(job)
            self.tally.released += 1
            claimer.done(job)

        slots = CallSlots(
            concurrency=config.concurrency,
            client=self.client,
            credentials=self.credentials,
            clock=self.clock,
            tally=self.tally,
            on_result=writer.add,
            on_give_back=give_back,
            on_done=claimer.done,
            on_block=writer.block_origin,
        )
        timetable = Timetable(
            clock=self.clock,
            client=self.client,
            tally=self.tally,
            on_due=lambda jobs: slots.start(jobs, stopping=claimer.stopping.is_set()),
            warm_seconds=config.warm_seconds,
        )
        self._give_back = give_back
        self._databases = (claims_db, results_db)
        return claimer, timetable, slots, writer

    async def run(self, *, install_signals: bool = False, started: Callable[[], None] | None = None) -> Tally:
        loop = asyncio.get_running_loop()
        claimer, timetable, slots, writer = self._build()
        self.claimer, self.timetable, self.slots, self.writer = claimer, timetable, slots, writer

        def mirror_stop() -> None:
            # Set from a signal handler or another thread: hand it to the event loop.
            loop.call_soon_threadsafe(claimer.stop)

        self.stop.add_listener(mirror_stop)
        if install_signals:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, self._on_signal, signum)
        config = self.config
        logger.info(
            "executor started",
            extra={
                "event": "start",
                "worker_id": config.worker_id,
                "concurrency": config.concurrency,
                "prefetch": config.prefetch,
                "poll_seconds": config.poll_seconds,
                "grace_seconds": config.grace_seconds,
                "once": config.once,
            },
        )
        claiming = asyncio.create_task(claimer.run())
        writing = asyncio.create_task(writer.run())
        reporting = asyncio.create_task(self._report_loop())
        expiring = asyncio.create_task(slots.expire_waiting())
        if started is not None:
            started()
        crashed: BaseException | None = None
        try:
            stop_waiter = asyncio.ensure_future(claimer.stopping.wait())
            await asyncio.wait([stop_waiter, claiming, writing, expiring], return_when=asyncio.FIRST_COMPLETED)
            if config.once and claiming.done() and _failure(claiming) is None and not writing.done():
                # Everything due is claimed: wait for those jobs (a stop still cuts this to the grace period).
                await claimer.wait_until_nothing_held(stop_waiter)
            stop_waiter.cancel()
            await asyncio.gather(stop_waiter, return_exceptions=True)  # no task left pending
            crashed = self._crash(claiming, writing, expiring)
            claimer.stop()
            if not claiming.done():
                await asyncio.wait([claiming])  # it finishes the claim in progress, so no committed claim is lost
            await self._drain(loop.time() + config.grace_seconds)
            writer.close()
            if not writing.done():
                await asyncio.wait([writing], timeout=RESULT_FLUSH_RESERVE_SECONDS)
            if not writing.done():
                logger.error(
                    "results not written before exit; the reconciler will return these jobs",
                    extra={
                        "event": "results_abandoned",
                        "results": len(writer.results),
                        "releases": len(writer.releases),
                    },
                )
        finally:
            for task in (claiming, writing, reporting, expiring):
                if not task.done():
                    task.cancel()
            await asyncio.gather(claiming, writing, reporting, expiring, return_exceptions=True)
            self.stop.remove_listener(mirror_stop)
            await timetable.stop_warming()
            await self.client.aclose()
            for database in self._databases:
                await database.close()
            self._flush_metrics()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu = usage.ru_utime + usage.ru_stime
            logger.info(
                "executor stopped",
                extra={
                    "event": "stop",
                    "worker_id": config.worker_id,
                    "cpu_seconds": round(cpu, 3),
                    "cpu_ms_per_fired": round(1000 * cpu / self.totals.fired, 3) if self.totals.fired else None,
                    **self.totals.fields(),
                },
            )
        crashed = crashed or self._crash(claiming, writing, expiring)
        if crashed is not None:
            raise LoopFailed(f"executor: {describe(crashed)}") from crashed
        return self.totals

    def _crash(self, *tasks: asyncio.Task[None]) -> BaseException | None:
        """The first part that died of an error, logged: a bug (the database is retried), or any error once."""
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

    async def _drain(self, deadline: float) -> None:
        """Let parked and in-flight jobs finish until `deadline`; give back or cancel the rest."""
        assert self.claimer is not None and self.timetable is not None and self.slots is not None
        claimer, slots = self.claimer, self.slots
        logger.info("draining", extra={"event": "drain", "held": claimer.held, "worker_id": self.config.worker_id})
        # Due jobs the free call slots cannot take go back at once: another executor may have free slots.
        slots.give_back_beyond_free_slots()
        await claimer.wait_until_nothing_held(deadline)
        if claimer.held == 0:
            return
        # Past the grace period. Jobs never called (parked, or waiting for a call slot) are given back;
        # calls in flight stay 'running' until their leases expire, then the reconciler returns them
        # (the attempt is counted: the call may have reached the receiver).
        not_started = self.timetable.take_all() + slots.take_waiting()
        for job in not_started:
            self._give_back(job, False)
        abandoned = await slots.cancel_calls()
        logger.warning(
            "grace period over; unfinished jobs left to the reconciler",
            extra={
                "event": "abandoned",
                "jobs": abandoned,
                "released": len(not_started),
                "worker_id": self.config.worker_id,
            },
        )

    async def _report_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.metrics_every_seconds)
            self._flush_metrics()

    def _flush_metrics(self) -> None:
        held = self.claimer.held if self.claimer is not None else 0
        EXECUTOR_HELD.set(held)
        window = self.tally.take()
        self.totals.add(window)
        if any(getattr(window, name) for name in COUNTERS):
            logger.info(
                "executor metrics",
                extra={
                    "event": "metrics",
                    "worker_id": self.config.worker_id,
                    "held": held,
                    "at": round(time.time(), 3),
                    **window.fields(),
                },
            )
