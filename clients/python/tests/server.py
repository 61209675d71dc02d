"""The real jobsched server for the SDK's tests: runserver and the loops as child processes of the project.

The SDK's virtualenv has no Django: the server runs with the project's own
interpreter (`JOBSCHED_SERVER_PYTHON`, default `<repo>/.venv/bin/python`) on a
database of its own (`<DATABASE_URL's name>_sdkclient`).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[3]
SERVER_PYTHON = os.environ.get("JOBSCHED_SERVER_PYTHON") or str(REPO / ".venv" / "bin" / "python")
DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/jobsched"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The tests' own database beside the developer's: `<name>_sdkclient`."""
    parts = urlsplit(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "_sdkclient"))


def server_env() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "jobsched_project.settings",
        "DEBUG": "1",
        "DATABASE_URL": database_url(),
        "EGRESS_ALLOWLIST": "127.0.0.1",
        "THROTTLE_CACHE_URL": "locmemcache://",
        "SECURE_SSL_REDIRECT": "0",
        "LOG_LEVEL": "WARNING",
    }


def manage(*args: str, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        [SERVER_PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def issue_tokens(tenants: list[str], *, env: dict[str, str]) -> dict[str, str]:
    """One token per tenant in one process (`manage.py issue_token` per tenant would start Django each time)."""
    script = (
        "import django, json, sys; django.setup(); from api.auth import issue_token; "
        "print(json.dumps({t: issue_token(t, ttl_seconds=7200) for t in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [SERVER_PYTHON, "-c", script, *tenants], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_until(predicate: Callable[[], object], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout} s")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def child(command: list[str], *, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """A child process for the block; stopped (SIGTERM, then SIGKILL) after it."""
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def api_server(env: dict[str, str], log_dir: Path) -> Iterator[str]:
    """`manage.py runserver` on a free port after `migrate`; yields its base URL."""
    manage("ensure_database", env=env)
    manage("migrate", "--noinput", env=env)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [SERVER_PYTHON, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    with child(command, env=env, log=log_dir / "runserver.log") as process:
        wait_until(lambda: _answers(f"{base}/healthz") or process.poll() is not None, timeout=60, what="runserver")
        assert process.poll() is None, (log_dir / "runserver.log").read_text()
        yield base


@contextlib.contextmanager
def loops(env: dict[str, str], log_dir: Path) -> Iterator[None]:
    """run_scheduler and run_executor with short idle sleeps, for the end-to-end tests."""
    with (
        child(
            [SERVER_PYTHON, "manage.py", "run_scheduler", "--idle-seconds", "0.2"],
            env=env,
            log=log_dir / "scheduler.log",
        ),
        child(
            [SERVER_PYTHON, "manage.py", "run_executor", "--idle-seconds", "0.5", "--grace", "5"],
            env=env,
            log=log_dir / "executor.log",
        ),
    ):
        yield


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1 that records what it gets and answers from a script of statuses."""

    url: str = ""
    requests: list[dict[str, object]] = field(default_factory=list)
    # Statuses to answer in order (with Retry-After for 429/503), then 200 forever.
    script: list[int] = field(default_factory=list)
    retry_after: str = "1"


@contextlib.contextmanager
def receiver() -> Iterator[Receiver]:
    state = Receiver()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            with lock:
                state.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": body,
                        "at": time.monotonic(),
                    }
                )
                status = state.script.pop(0) if state.script else 200
            payload = json.dumps({"ok": status == 200}).encode()
            self.send_response(status)
            if status in (429, 503):
                self.send_header("Retry-After", state.retry_after)
            self.send_header("Content-Type", "application/json" if status < 400 else "application/problem+json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
