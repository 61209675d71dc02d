"""A database connection of its own for one of the executor's parts: one thread, its own backoff.

mysqlclient blocks, so each part that talks to MySQL (the claims, the result writes) runs
on a single-thread pool with its own connection: a slow write never delays a claim and the
event loop never waits on MySQL. A dropped connection is closed so the next call reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import connection

from workers.health import Heartbeat
from workers.loop import DATABASE_ERRORS, ReconnectBackoff, describe

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _in_db_thread(fn: Callable[..., T], **kwargs: Any) -> T:
    try:
        return fn(**kwargs)
    except DATABASE_ERRORS:
        connection.close()
        raise


class DatabaseThread:
    """Run blocking database calls on this part's thread; log and pace a dropped database."""

    def __init__(self, name: str, *, worker_id: str, heartbeat: Heartbeat | None = None) -> None:
        self.name = name
        self.worker_id = worker_id
        self.heartbeat = heartbeat  # fed by every answer and every failure
        self.backoff = ReconnectBackoff()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"executor-{name}")

    async def call(self, fn: Callable[..., T], **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, functools.partial(_in_db_thread, fn, **kwargs)
        )

    def answered(self) -> None:
        self.backoff.reset()
        if self.heartbeat is not None:
            self.heartbeat.database_answered()

    def failed(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.database_failed()

    def unavailable(self, exc: BaseException, **extra: Any) -> float:
        """Log a dropped database and return the next wait (the workers' one backoff policy)."""
        self.failed()
        delay = self.backoff.next_delay()
        logger.warning(
            f"database unavailable for {self.name}, retrying",
            extra={
                "event": "db_unavailable",
                "worker_id": self.worker_id,
                "retry_in": round(delay, 3),
                "failures": self.backoff.failures,
                "error": describe(exc),
                **extra,
            },
        )
        return delay

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.get_running_loop().run_in_executor(self._pool, connection.close)
        self._pool.shutdown(wait=False)
