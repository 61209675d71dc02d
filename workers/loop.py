"""The one loop every worker runs: step, sleep when idle, stop on a signal.

A step returns True when it found work, so the loop goes again at once while
there is a backlog and sleeps only when idle. SIGTERM/SIGINT set a flag that
also interrupts the sleep, so a deployment stops within one step. A dropped
database connection is closed and retried with backoff instead of killing the
process: the queue's state lives in MySQL, so nothing is lost meanwhile. A loop
may name other errors that mean "a dependency is away" (`unavailable`, e.g. the
archiver's history store): they back off the same way, from 0.5 s doubling up to
`max_backoff_seconds`, and the first step that succeeds resets the backoff.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

from django.db import close_old_connections, connection
from django.db.utils import InterfaceError, OperationalError

logger = logging.getLogger(__name__)

MAX_RECONNECT_BACKOFF_SECONDS = 30.0


class StopFlag:
    """Set by a signal (or a test); waiting on it is an interruptible sleep."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_name: str | None = None

    def install(self, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> None:
        for signum in signals:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signal_name = signal.Signals(signum).name
        self._event.set()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when woken because the flag was set."""
        return self._event.wait(max(0.0, seconds))


class WorkerLoop:
    """Run `step` until stopped; see the module docstring."""

    def __init__(
        self,
        name: str,
        step: Callable[[], bool],
        *,
        idle_seconds: float,
        stop: StopFlag | None = None,
        unavailable: tuple[type[Exception], ...] = (),
        max_backoff_seconds: float = MAX_RECONNECT_BACKOFF_SECONDS,
    ) -> None:
        self.name = name
        self.step = step
        self.idle_seconds = idle_seconds
        self.stop = stop or StopFlag()
        self.unavailable = unavailable
        self.max_backoff_seconds = max_backoff_seconds
        self._backoff = 0.0

    def run(self, *, once: bool = False) -> None:
        logger.info("worker started", extra={"event": "start", "worker": self.name})
        while not self.stop.is_set():
            found_work = self.run_step()
            if once:
                break
            if not found_work:
                self.stop.wait(self._backoff or self.idle_seconds)
        logger.info("worker stopped", extra={"event": "stop", "worker": self.name, "signal": self.stop.signal_name})

    def run_step(self) -> bool:
        """One step with connection hygiene; False (idle) when the database is away."""
        close_old_connections()
        try:
            found_work = bool(self.step())
        except (OperationalError, InterfaceError) as exc:
            # The database dropped or restarted: reconnect on the next step.
            connection.close()
            self._back_off()
            logger.warning(
                "database unavailable, retrying",
                extra={"event": "db_unavailable", "worker": self.name, "retry_in": self._backoff, "error": str(exc)},
            )
            return False
        except self.unavailable as exc:
            self._back_off()
            logger.warning(
                "dependency unavailable, retrying",
                extra={"event": "unavailable", "worker": self.name, "retry_in": self._backoff, "error": str(exc)},
            )
            return False
        self._backoff = 0.0
        return found_work

    def _back_off(self) -> None:
        self._backoff = min(self.max_backoff_seconds, max(0.5, self._backoff * 2))
