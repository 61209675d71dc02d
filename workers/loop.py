"""The one loop every worker runs: step, sleep when idle, stop on a signal, survive a lost database.

In the shape of healthchecks' `sendalerts`: a signal handler sets a flag, the
loop runs `while not stopping`, each step returns True when it found work (step
again at once while there is a backlog) or False (sleep the idle interval; the
signal interrupts the sleep at once, so a deployment stops within one step).

Two ways to run, one meaning each:
- `run()` (a deployment): a dropped database is closed and retried with the one
  `ReconnectBackoff` policy instead of killing the process (the queue's state
  lives in MySQL, so nothing is lost meanwhile); any other error is a bug: it
  is logged with its traceback and ends the loop with `LoopFailed`.
- `run_until_idle()` (`--once`: cron-style use, tests): steps until one finds
  no work, then returns; any error, the database's included, ends it with
  `LoopFailed` at once, so the command exits non-zero with one readable line.

A loop may also name errors that mean "a dependency is away" (`unavailable`, e.g.
the archiver's history store): `run()` backs off on them with the same policy
(the archiver gives its own `ReconnectBackoff` a higher cap), and the first step
that succeeds resets it.

The executor's asyncio loop shares `StopFlag` and `ReconnectBackoff`
(workers/executor/runner.py); `run_worker` is how every command runs its loop.
"""

from __future__ import annotations

import gc
import logging
import random
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.core.management.base import CommandError
from django.db import close_old_connections, connection
from django.db.utils import InterfaceError, OperationalError

if TYPE_CHECKING:
    from workers.health import Heartbeat

logger = logging.getLogger(__name__)

# What a dropped or restarted database raises through Django (and mysqlclient beneath it).
DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError)


class ReconnectBackoff:
    """Exponential backoff with jitter and a low cap, for every loop that lost its database.

    The cap is low on purpose: every loop must be working again within ~5 s of the
    database coming back, so no wait may exceed `cap` (plus one step). The jitter
    (each wait drawn from [delay/2, delay]) keeps replicas that lost the database
    together from reconnecting in lockstep. Hand-written because a loop is not one
    retried call (tenacity's waits need its retry state) and the rule is these lines.
    """

    def __init__(self, *, initial: float = 0.25, cap: float = 2.0, rng: random.Random | None = None) -> None:
        if not 0 < initial <= cap:
            raise ValueError("need 0 < initial <= cap")
        self.initial = initial
        self.cap = cap
        self.failures = 0
        self._rng = rng or random.Random()

    def next_delay(self) -> float:
        """Count one more failure in a row and return how long to wait before the next try."""
        self.failures += 1
        delay = min(self.cap, self.initial * 2 ** min(self.failures - 1, 16))
        return self._rng.uniform(delay / 2, delay)

    def reset(self) -> None:
        """The database answered: the next failure starts from `initial` again."""
        self.failures = 0


class StopFlag:
    """Set by SIGTERM/SIGINT (or `set()` from any thread); waiting on it is an interruptible sleep.

    `add_listener` lets an asyncio loop mirror the flag in its own event
    (`loop.call_soon_threadsafe(event.set)`), so the executor stops on the same flag.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._listeners: list[Callable[[], None]] = []
        self.signal_name: str | None = None

    def install(self, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> None:
        for signum in signals:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        # No logging here: a handler interrupting a log call could interleave or deadlock it; `stop` logs it.
        self.signal_name = signal.Signals(signum).name
        self.set()

    def set(self) -> None:
        self._event.set()
        for listener in list(self._listeners):
            listener()

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call `listener` when the flag is set (at once if it already is); it must be thread-safe."""
        self._listeners.append(listener)
        if self._event.is_set():
            listener()

    def remove_listener(self, listener: Callable[[], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when woken because the flag was set."""
        return self._event.wait(max(0.0, seconds))


class LoopFailed(RuntimeError):
    """A loop ended on an error; the message is the one line an operator reads."""


def describe(exc: BaseException) -> str:
    """`Type: message` on one line (mysqlclient's messages carry the reason, e.g. "Can't connect")."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class WorkerLoop:
    """Run `step` until stopped, or until idle; see the module docstring."""

    def __init__(
        self,
        name: str,
        step: Callable[[], bool],
        *,
        idle_seconds: float,
        stop: StopFlag | None = None,
        backoff: ReconnectBackoff | None = None,
        unavailable: tuple[type[Exception], ...] = (),
        unavailable_backoff: ReconnectBackoff | None = None,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self.name = name
        self.step = step
        self.idle_seconds = idle_seconds
        self.stop = stop or StopFlag()
        self.backoff = backoff or ReconnectBackoff()
        self.unavailable = unavailable
        # Its own policy, so a slow one for another dependency (the history store) never
        # delays reconnecting to the database past the database policy's low cap.
        self.unavailable_backoff = unavailable_backoff or self.backoff
        self.heartbeat = heartbeat  # /healthz on --metrics-port (workers/health.py)

    def run(self) -> None:
        """Step until stopped: busy steps back to back, idle ones followed by the idle sleep."""
        self._log_start()
        while not self.stop.is_set():
            wait = self.run_step()
            if self.heartbeat is not None:
                self.heartbeat.beat()  # an iteration ended (well or not): the loop is not stuck
            if wait:
                self.stop.wait(wait)
        self._log_stop()

    def run_until_idle(self) -> None:
        """Step until a step finds no work (or a stop); any error raises `LoopFailed` at once."""
        self._log_start()
        try:
            while not self.stop.is_set():
                close_old_connections()
                if not self.step():
                    break
        except Exception as exc:
            connection.close()
            raise LoopFailed(f"{self.name}: {describe(exc)}") from exc
        finally:
            close_old_connections()
        self._log_stop()

    def run_step(self) -> float:
        """One step with connection hygiene; the seconds to wait before the next one (0: at once).

        A dropped database answers the backoff's next delay; a bug raises `LoopFailed`.
        """
        # As Django does around a request: drop a connection that broke or outlived CONN_MAX_AGE.
        close_old_connections()
        try:
            found_work = bool(self.step())
        except DATABASE_ERRORS as exc:
            # The database dropped or restarted: a fresh connection on the next step.
            connection.close()
            if self.heartbeat is not None:
                self.heartbeat.database_failed()
            delay = self.backoff.next_delay()
            logger.warning(
                "database unavailable, retrying",
                extra={
                    "event": "db_unavailable",
                    "worker": self.name,
                    "retry_in": round(delay, 3),
                    "failures": self.backoff.failures,
                    "error": describe(exc),
                },
            )
            return delay
        except self.unavailable as exc:
            # A dependency other than the database is away (its work stays queued in MySQL).
            delay = self.unavailable_backoff.next_delay()
            logger.warning(
                "dependency unavailable, retrying",
                extra={
                    "event": "unavailable",
                    "worker": self.name,
                    "retry_in": round(delay, 3),
                    "failures": self.unavailable_backoff.failures,
                    "error": describe(exc),
                },
            )
            return delay
        except Exception as exc:
            logger.exception("worker step crashed", extra={"event": "crash", "worker": self.name})
            raise LoopFailed(f"{self.name}: {describe(exc)}") from exc
        if self.backoff.failures or self.unavailable_backoff.failures:
            logger.info("dependencies back", extra={"event": "db_back", "worker": self.name})
        self.backoff.reset()
        self.unavailable_backoff.reset()
        self._database_answered()
        return 0.0 if found_work else self.idle_seconds

    def _database_answered(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.database_answered()

    def _log_start(self) -> None:
        logger.info("worker started", extra={"event": "start", "worker": self.name})

    def _log_stop(self) -> None:
        logger.info("worker stopped", extra={"event": "stop", "worker": self.name, "signal": self.stop.signal_name})


def settle_startup_objects() -> None:
    """Take what startup built (Django, the apps, the settings: ~100,000 objects, kept for the
    process's life) out of the garbage collector's reach: each full collection then walks only
    what the loop allocated since, instead of pausing every thread of the process for the whole
    heap (a stall in a burst, in the executor). No collection first: it would cost each start a
    tenth of a second to free the little garbage startup leaves. Once per process: a loop run again
    in the same process (tests call the commands in theirs) has nothing new from startup to freeze.
    Then the collector runs again: manage.py pauses it while a loop starts."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
    gc.enable()


def run_worker(run: Callable[[], object]) -> None:
    """Run a loop for a management command: `LoopFailed` becomes one `CommandError` line and exit 1.

    Django prints a CommandError as one line on stderr (`--traceback` shows the stack).
    """
    settle_startup_objects()
    try:
        run()
    except LoopFailed as exc:
        raise CommandError(str(exc)) from exc
