"""The timetable: each claimed job waits on a timer for its second, one timer per due instant.

Each job waits for its `next_attempt_at` on the database's clock, mapped to the local
monotonic clock by `DatabaseClock`: worker clock skew does not move the fire time, and a
job never fires earlier than its second minus the estimate's error bound. Jobs due at the
same instant share one timer across claims, so a burst's jobs start in the order they were
claimed: with one timer per claim, the timers of one instant fired in the loop's order
(uvloop rounds each to its millisecond, and one woken early is armed again), and the first
claim's jobs, where the fair claim puts the small tenants', could start behind thousands of
others. A group due later than `warm_seconds` gets its connections opened that long ahead
(`DeliveryClient.warm`: bounded, vetted).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from jobs.queue import ClaimedJob
from outbound.client import DeliveryClient

from .clock import DatabaseClock
from .tally import Tally

logger = logging.getLogger(__name__)

WARM_MIN_SECONDS = 0.02  # a group due sooner is not warmed: its calls would race the warm-up's dials


@dataclass(kw_only=True, eq=False)
class Timetable:
    """Park jobs until their second, then hand each instant's group to `on_due`, in claim order."""

    clock: DatabaseClock
    client: DeliveryClient
    tally: Tally
    on_due: Callable[[list[ClaimedJob]], None]
    warm_seconds: float = 0.5
    timers: dict[object, tuple[asyncio.Handle, list[ClaimedJob]]] = field(default_factory=dict, init=False)
    _parked_at: dict[datetime, object] = field(default_factory=dict, init=False)  # an instant's `timers` key
    _warm_timers: dict[object, asyncio.TimerHandle] = field(default_factory=dict, init=False)  # as `timers`
    _warming: set[asyncio.Task[None]] = field(default_factory=set, init=False)

    def park(self, jobs: list[ClaimedJob]) -> None:
        """Put each job on its instant's timer (a new one, or the instant's from an earlier claim)."""
        loop = asyncio.get_running_loop()
        groups: dict[datetime, list[ClaimedJob]] = {}
        for job in jobs:
            groups.setdefault(job.next_attempt_at, []).append(job)
        for due, group in groups.items():
            parked = self._parked_at.get(due)
            if parked is not None:
                self.timers[parked][1].extend(group)  # the timer's own list: it fires them all
                if (
                    self.warm_seconds > 0
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
            self.timers[key] = (loop.call_later(max(0.0, wait), self._fire, key, group, at, due), group)
            self._parked_at[due] = key
            if self.warm_seconds > 0 and wait > WARM_MIN_SECONDS:
                # Only jobs already claimed, and only while they wait: a group due now dials as it fires.
                delay = max(0.0, wait - self.warm_seconds)
                self._warm_timers[key] = loop.call_later(delay, self._warm, key, group, at)

    def take_all(self) -> list[ClaimedJob]:
        """Cancel every timer and return the jobs they held (never called: to be given back)."""
        jobs = [job for _, group in self.timers.values() for job in group]
        for key, (handle, _) in self.timers.items():
            handle.cancel()
            warm = self._warm_timers.pop(key, None)
            if warm is not None:
                warm.cancel()
        self.timers.clear()
        self._parked_at.clear()
        return jobs

    async def stop_warming(self) -> None:
        for handle in self._warm_timers.values():
            handle.cancel()
        self._warm_timers.clear()
        for task in self._warming:
            task.cancel()
        await asyncio.gather(*self._warming, return_exceptions=True)

    def _fire(self, key: object, group: list[ClaimedJob], at: float, due: datetime) -> None:
        early = at - time.monotonic()
        if early > 0:
            # A loop whose timers run on a coarser, cached clock (uvloop: milliseconds) can wake early.
            loop = asyncio.get_running_loop()
            self.timers[key] = (loop.call_later(early, self._fire, key, group, at, due), group)
            return
        self.timers.pop(key, None)
        self._parked_at.pop(due, None)
        self.on_due(group)

    def _warm(self, key: object, group: list[ClaimedJob], at: float) -> None:
        self._warm_timers.pop(key, None)
        task = asyncio.get_running_loop().create_task(self._warm_group(group, at))
        self._warming.add(task)
        task.add_done_callback(self._warming.discard)

    async def _warm_group(self, group: list[ClaimedJob], at: float) -> None:
        try:
            warmed = await self.client.warm(group, within=at - time.monotonic())
            self.tally.warmed += warmed  # after the await: the window may have been taken meanwhile
        except Exception:
            # Only a head start is lost: the calls dial (through the same check) as they fire.
            logger.exception("warming connections failed", extra={"event": "warm_crash", "jobs": len(group)})
