"""Real management commands as child processes, pointed at the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from django.conf import settings

from database.reachability import database_url_for


def child_env(**extra: str) -> dict[str, str]:
    """The environment a child command needs to see the same database and test settings."""
    return {**os.environ, "DATABASE_URL": database_url_for(), "DJANGO_SETTINGS_MODULE": "tests.settings", **extra}


def run_python(*args: str, env: dict[str, str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """`python <args>` in the project's root (`manage.py ...`, `-m bench.system ...`) to its end, output captured."""
    return subprocess.run(
        [sys.executable, *args], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_manage(*args: str, env: dict[str, str], timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """`manage.py <args>` to its end (a command that exits by itself), output captured."""
    return run_python("manage.py", *args, env=env, timeout=timeout)


def start_manage(*args: str, env: dict[str, str], log_path: str | os.PathLike | None = None) -> subprocess.Popen:
    """Start `manage.py <args>`; output goes to `log_path` (a pipe nobody reads could fill and block it)."""
    command = [sys.executable, str(settings.BASE_DIR / "manage.py"), *args]
    if log_path is None:
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    with open(log_path, "w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def stop_processes(*processes: subprocess.Popen, timeout: float = 30.0) -> list[int | None]:
    """SIGTERM every live one first (their graceful stops overlap), then wait; kill what outlives `timeout`.

    Their exit codes in order, None for one that had to be killed.
    """
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    codes: list[int | None] = []
    for process in processes:
        try:
            codes.append(process.wait(timeout))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            codes.append(None)
    return codes


def wait_until(predicate: Callable[[], object], *, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll `predicate` until it is truthy; the real processes under test decide how long that takes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} not met within {timeout} s")
