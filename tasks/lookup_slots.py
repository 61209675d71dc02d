"""A tenant's share of the API pod's create-time name lookups, held as file locks.

The API's gunicorn workers are processes serving one request at a time: a count kept in each
process let one tenant's hanging names take every worker of the pod. Each of a tenant's slots is
a file in a directory the pod's workers share (gunicorn.conf.py makes it before they fork, and
names it in LOOKUP_SLOTS_DIR_ENV); a lookup holds one slot's flock. The kernel frees it when the
file is closed or its process dies, so no crash leaves a slot taken, and since flock belongs to
the open file, two threads of one process count apart too. Without the variable (runserver, the
tests' client) a process has a directory of its own.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

LOOKUP_SLOTS_DIR_ENV = "JOBSCHED_LOOKUP_SLOTS_DIR"
_FLAGS = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC

logger = logging.getLogger(__name__)


class NoSlotFree(Exception):
    """Every one of the tenant's slots is held by a lookup in flight."""


@lru_cache(maxsize=1)
def _directory() -> Path:
    shared = os.environ.get(LOOKUP_SLOTS_DIR_ENV)
    if shared:
        return Path(shared)
    own = tempfile.mkdtemp(prefix="jobsched-lookups-")
    atexit.register(shutil.rmtree, own, ignore_errors=True)
    return Path(own)


@contextmanager
def tenant_slot(tenant_id: str, *, slots: int) -> Iterator[None]:
    """Hold one of `tenant_id`'s `slots` for the block; raise NoSlotFree when all are held.

    An OSError (no file can be opened: too many open, a full disk) is logged and raised: the URL
    check answers it as a lookup that did not finish.
    """
    # A digest, not the id, names the files: an id may hold any character.
    stem = hashlib.sha256(tenant_id.encode()).hexdigest()[:32]
    for index in range(slots):
        fd = _open(_directory() / f"{stem}.{index}")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        try:
            yield
        finally:
            os.close(fd)  # frees the lock
        return
    raise NoSlotFree


def _open(path: Path) -> int:
    try:
        try:
            return os.open(path, _FLAGS, 0o600)
        except FileNotFoundError:
            # The directory went (a cleaner of /tmp): made again, it serves as before.
            path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(path, _FLAGS, 0o600)
    except OSError as exc:
        logger.error(
            "lookup slots unusable: %s",
            exc,
            extra={"event": "lookup_slots_unusable", "directory": str(path.parent)},
        )
        raise
