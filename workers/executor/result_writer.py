"""Results and give-backs, written in batches behind their fences on the result writes' own thread.

Results queue up as calls end and are written `result_batch_max` at a time (bigger
batches cost the database less per result), after a short wait that gathers results
finishing together. A batch that failed is written again after a backoff: if the lost
reply hid a commit, or the lease ran out meanwhile, the fence drops the repeat (counted
as dropped), which is right. Give-backs (`jobs.queue.release_claims`) go out first, one
statement each time, then the origins' Retry-After blocks (`jobs.queue.block_origins`), before
the results that asked for them.

Claims come first: while the executor's claims come back full (`behind`: due jobs may still
wait to be claimed, as in a burst or a backlog), results stay queued, up to RESULT_HOLD_SECONDS
and RESULT_HOLD_BYTES, so the database's time goes to the claims that due calls wait for. A
call ends LEASE_SLACK_SECONDS - START_WITHIN_SECONDS before its lease (`call_slots`); the hold
takes a small part of that room for the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from jobs.queue import (
    ClaimedJob,
    JobResult,
    OriginBlock,
    Outcome,
    WriteReport,
    block_origins,
    record_results,
    release_claims,
)
from ratelimits.origins import origin_of_url
from workers.loop import DATABASE_ERRORS, describe
from workers.metrics import EXECUTOR_FENCE_DROPS, EXECUTOR_RELEASED, EXECUTOR_RESULTS

from .db_threads import DatabaseThread
from .tally import Tally

logger = logging.getLogger(__name__)

RESULT_HOLD_SECONDS = 2.0  # a result waits at most this long for the claims to catch up
RESULT_HOLD_BYTES = 64 * 1024 * 1024  # ... and the held results (`_result_bytes` each) at most this much
RESULT_OVERHEAD_BYTES = 256  # a result in memory besides its response body and error (about)


def _result_bytes(result: JobResult) -> int:
    return RESULT_OVERHEAD_BYTES + len(result.response_body or "") + len(result.error or "")


@dataclass(kw_only=True, eq=False)
class ResultWriter:
    """Queue results and give-backs (`add`, `give_back`); `run()` writes them until `close()` and empty."""

    worker_id: str
    db: DatabaseThread
    tally: Tally
    batch_max: int = 500
    flush_seconds: float = 0.1
    # Whether the claims are behind (the claimer's last claim was full); `caught_up()` when they no longer are.
    behind: Callable[[], bool] = lambda: False
    hold_seconds: float = RESULT_HOLD_SECONDS
    hold_bytes: int = RESULT_HOLD_BYTES
    once: bool = False  # any database error ends the run instead of a retry
    results: list[JobResult] = field(default_factory=list, init=False)
    releases: list[ClaimedJob] = field(default_factory=list, init=False)  # claims to give back
    blocks: list[OriginBlock] = field(default_factory=list, init=False)  # origins that sent Retry-After
    _queued_at: list[float] = field(default_factory=list, init=False)  # the loop's time of each result's add
    _queued_bytes: int = field(default=0, init=False)  # the queued results' `_result_bytes`
    _ready: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _unhold: asyncio.Event = field(default_factory=asyncio.Event, init=False)  # ends a hold early
    _closing: bool = field(default=False, init=False)

    def add(self, result: JobResult) -> None:
        self.results.append(result)
        self._queued_at.append(asyncio.get_running_loop().time())
        self._queued_bytes += _result_bytes(result)
        if self._queued_bytes >= self.hold_bytes:
            self._unhold.set()
        self._ready.set()

    def give_back(self, job: ClaimedJob) -> None:
        self.releases.append(job)
        self._unhold.set()
        self._ready.set()

    def block_origin(self, job: ClaimedJob, seconds: int) -> None:
        """The job's origin asked to be left alone for `seconds`: hold back the tenant's calls to it."""
        origin = origin_of_url(job.url)
        if origin is not None and seconds > 0:
            self.blocks.append(OriginBlock(job.tenant_id, origin, seconds))
            self._unhold.set()
            self._ready.set()

    def caught_up(self) -> None:
        """The claims are no longer behind: write the held results."""
        self._unhold.set()

    def close(self) -> None:
        """Write what is queued, then end `run()`."""
        self._closing = True
        self._unhold.set()
        self._ready.set()

    async def run(self) -> None:
        while True:
            if self.releases:
                await self._write_releases()
            if self.blocks:
                await self._write_blocks()
            if not self.results:
                if self._closing and not self.releases and not self.blocks:
                    return
                if not self.releases and not self.blocks:
                    self._ready.clear()
                    await self._ready.wait()
                continue
            if len(self.results) < self.batch_max and not self._closing:
                await asyncio.sleep(self.flush_seconds)  # gather results finishing together
            await self._hold()
            # Give-backs and Retry-After blocks that came in meanwhile go before the results.
            if self.releases:
                await self._write_releases()
            if self.blocks:
                await self._write_blocks()
            batch, queued_at = self.results[: self.batch_max], self._queued_at[: self.batch_max]
            del self.results[: self.batch_max], self._queued_at[: self.batch_max]
            batch_bytes = sum(_result_bytes(result) for result in batch)
            self._queued_bytes -= batch_bytes
            try:
                report = await self.db.call(record_results, worker_id=self.worker_id, results=batch)
            except DATABASE_ERRORS as exc:
                if self.once:
                    raise  # unwritten results: their leases expire and the reconciler returns the jobs
                self.results[:0], self._queued_at[:0] = batch, queued_at
                self._queued_bytes += batch_bytes
                await asyncio.sleep(self.db.unavailable(exc, results=len(self.results)))
                continue
            self.db.answered()
            self._count(report)

    async def _hold(self) -> None:
        """Keep the queued results while the claims are behind (the module's docstring), until the
        oldest has waited `hold_seconds`, they reach `hold_bytes`, or the writer closes; write the
        give-backs and Retry-After blocks that come in meanwhile (they never extend the hold).
        """
        loop = asyncio.get_running_loop()
        while self.behind() and not self._closing and self._queued_bytes < self.hold_bytes:
            left = self._queued_at[0] + self.hold_seconds - loop.time()
            if left <= 0:
                return
            if self.releases:
                await self._write_releases()
                continue
            if self.blocks:
                await self._write_blocks()
                continue
            self._unhold.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._unhold.wait(), left)

    def _count(self, report: WriteReport) -> None:
        outcomes = Counter(result.outcome for result in report.written)
        for outcome, count in outcomes.items():
            EXECUTOR_RESULTS.labels(outcome.value).inc(count)  # per batch: `labels()` is a locked lookup
        self.tally.succeeded += outcomes[Outcome.SUCCEEDED]
        self.tally.retried += outcomes[Outcome.RETRY]
        self.tally.dead += outcomes[Outcome.DEAD]
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
        self.tally.dropped += len(report.dropped)
        EXECUTOR_FENCE_DROPS.inc(len(report.dropped))

    async def _write_blocks(self) -> None:
        """Write the queued Retry-After blocks in one statement; ones that failed are dropped (logged).

        A block only slows an origin down: losing one costs calls the origin will refuse again
        (and block again), never a job.
        """
        blocks, self.blocks = self.blocks, []
        try:
            await self.db.call(block_origins, blocks=blocks)
        except DATABASE_ERRORS as exc:
            if self.once:
                raise
            self.db.failed()
            logger.warning(
                "origin blocks not written",
                extra={"event": "origin_block_failed", "origins": len(blocks), "error": describe(exc)},
            )
            return
        self.db.answered()

    async def _write_releases(self) -> None:
        """Give back the queued claims in one statement; one that failed is left to the reconciler.

        A repeat would be harmless (each give-back grows the fence past the token it carried), but
        those jobs' leases end soon enough: the reconciler takes them back, their attempt counted,
        as after a crash.
        """
        releases, self.releases = self.releases, []
        try:
            released = await self.db.call(release_claims, worker_id=self.worker_id, jobs=releases)
        except DATABASE_ERRORS as exc:
            if self.once:
                raise  # unreleased claims: their leases expire and the reconciler returns the jobs
            self.db.failed()
            logger.warning(
                "claims not given back; left to the reconciler",
                extra={
                    "event": "release_failed",
                    "worker_id": self.worker_id,
                    "jobs": len(releases),
                    "error": describe(exc),
                },
            )
            return
        self.db.answered()
        EXECUTOR_RELEASED.inc(released)
        # Fewer than asked: the reconciler had taken those back already (their leases had expired).
        logger.info(
            "claims given back",
            extra={
                "event": "claims_released",
                "worker_id": self.worker_id,
                "jobs": len(releases),
                "released": released,
            },
        )
