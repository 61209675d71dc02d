"""A transaction InnoDB chose as a deadlock victim, run again.

InnoDB rolls a victim back whole, so nothing of it was committed (no job fired, no run made):
running it again is safe, and is what the server's error asks for. Each retry waits a few
milliseconds, drawn at random, so the two transactions that met do not meet again at once.
A third deadlock is raised to the loop, which backs off as for a lost database.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db.utils import OperationalError

MYSQL_DEADLOCK = 1213
DEADLOCK_RETRIES = 3
RETRY_WAIT_SECONDS = (0.005, 0.05)  # drawn per retry

logger = logging.getLogger(__name__)

T = TypeVar("T")


def retry_deadlocks(run: Callable[[], T], *, what: str) -> T:
    """`run()`, again after a deadlock (DEADLOCK_RETRIES tries in all); logs `<what>_deadlock`."""
    for attempt in range(1, DEADLOCK_RETRIES + 1):
        try:
            return run()
        except OperationalError as exc:
            if exc.args[0] != MYSQL_DEADLOCK or attempt == DEADLOCK_RETRIES:
                raise
            logger.info(f"{what} deadlocked, retrying", extra={"event": f"{what}_deadlock", "attempt": attempt})
            time.sleep(random.uniform(*RETRY_WAIT_SECONDS))
    raise AssertionError("unreachable")
