"""Helpers for the sharded-queue tests: a loop set per shard, one shard's rows, a shard's session."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.end_to_end import LOOPS
from tests.processes import start_manage, stop_processes


@contextlib.contextmanager
def on_shard(shard: str) -> Iterator[None]:
    """The default connection targets one shard (`USE keyspace:shard`), as a loop's session does."""
    with connection.cursor() as cursor:
        cursor.execute(f"USE `{settings.VITESS_TENANT_KEYSPACE}:{shard}`")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("USE `@primary`")


def rows_on_shard(shard: str, sql: str, params: list | None = None) -> list[tuple]:
    with on_shard(shard), connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall())


def start_loop(shard: str, loop: str, env: dict[str, str], log_dir: Path) -> subprocess.Popen:
    return start_manage(*LOOPS[loop], env=env, log_path=log_dir / f"{loop}{shard}.log")


@contextlib.contextmanager
def loop_sets(envs: dict[str, dict[str, str]], log_dir: Path) -> Iterator[dict[str, dict[str, subprocess.Popen]]]:
    """The four loops per shard (`envs[shard]` points DATABASE_URL at it); each must exit 0, no traceback.

    A test may replace a loop in the yielded dict (a killed executor's successor): the dict's
    processes are the ones stopped and checked.
    """
    loops = {shard: {loop: start_loop(shard, loop, env, log_dir) for loop in LOOPS} for shard, env in envs.items()}
    try:
        yield loops
    finally:
        flat = [(shard, loop, process) for shard, procs in loops.items() for loop, process in procs.items()]
        exits = stop_processes(*(process for _, _, process in flat))
    logs = {f"{loop}{shard}": (log_dir / f"{loop}{shard}.log").read_text() for shard, loop, _ in flat}
    assert exits == [0] * len(flat), (exits, logs)
    assert all("Traceback" not in text for text in logs.values()), logs
