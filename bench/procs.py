"""Processes seen from outside: CPU time from /proc, child processes with their logs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.processes import stop_processes

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parent.parent
MANAGE = [sys.executable, str(ROOT / "manage.py")]


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of one process (Linux /proc); 0 when it cannot be read."""
    if not pid:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (a Celery worker's pool processes)."""
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(proc.name))
    found: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def database_server_pid(cursor) -> int | None:
    """The pid of the server `cursor` talks to, from its pid file (several local servers may run
    at once: the first `mariadbd` in /proc may be another one); by name when the file is not ours to read."""
    cursor.execute("SELECT @@pid_file")
    (pid_file,) = cursor.fetchone()
    try:
        pid = int(Path(pid_file.decode() if isinstance(pid_file, bytes) else pid_file).read_text().strip())
    except (OSError, ValueError):
        return pid_named("mariadbd", "mysqld")
    return pid if Path(f"/proc/{pid}").exists() else pid_named("mariadbd", "mysqld")


class NoServerThread(Exception):
    """The server thread behind a connection cannot be read (another machine, or a server without thread ids)."""


def server_thread_clock(cursor) -> Callable[[], int]:
    """A clock of the CPU nanoseconds spent by the server thread serving `cursor`'s connection.

    Linux /proc/<server pid>/task/<thread id>/schedstat: other clients and the server's background
    threads do not count, so the figure holds on a busy machine better than wall time.
    """
    server_pid = database_server_pid(cursor)
    try:
        cursor.execute("SELECT tid FROM information_schema.processlist WHERE id = CONNECTION_ID()")
        (thread_id,) = cursor.fetchone()
    except Exception as exc:  # MySQL has no processlist TID (performance_schema.threads has it)
        raise NoServerThread(f"this server does not tell its thread ids: {exc}") from exc
    schedstat = Path(f"/proc/{server_pid}/task/{thread_id}/schedstat")
    if not schedstat.exists():
        raise NoServerThread(f"cannot read {schedstat}: the server must run on this machine")

    def thread_ns() -> int:
        return int(schedstat.read_text().split()[0])

    return thread_ns


def pid_named(*names: str) -> int | None:
    """The pid of the first process whose command name is one of `names` (the local database server)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "comm").read_text().strip() in names:
                    return int(proc.name)
            except OSError:
                continue
    return None


class Child:
    """A child process whose output goes to a log file (a pipe nobody reads would fill and block it)."""

    def __init__(self, name: str, command: list[str], *, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        with open(self.log_path, "wb") as log:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.process.pid

    def exited(self) -> bool:
        return self.process.poll() is not None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited ({self.process.returncode}) before {text!r}: {self.log()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not log {text!r} within {timeout:.0f} s; see {self.log_path}")
            time.sleep(0.05)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then kill after `timeout`; the exit code, None when it had to be killed."""
        return stop_processes(self.process, timeout=timeout)[0]


def stop_all(children: Sequence[Child], timeout: float = 30.0) -> dict[str, int | None]:
    """Stop every child at once (their graceful stops overlap); each one's exit code by name."""
    codes = stop_processes(*(child.process for child in children), timeout=timeout)
    return {child.name: code for child, code in zip(children, codes, strict=True)}


def start_executors(
    count: int,
    *,
    options: Sequence[str],
    env: dict[str, str],
    log_dir: Path,
    name: str = "executor",
    worker: str = "bench",
    command: str = "run_executor",
    manage: Sequence[str] = MANAGE,
) -> list[Child]:
    """`count` real `command` processes, `<name>-<n>` logging to `<log_dir>/<name>-<n>.log`, ids `<worker>-<n>`.

    `manage`: the manage.py to run (another checkout's, for a base commit)."""
    return [
        Child(
            f"{name}-{n}",
            [*manage, command, "--worker-id", f"{worker}-{n}", *options],
            env=env,
            log_dir=log_dir,
        )
        for n in range(count)
    ]
