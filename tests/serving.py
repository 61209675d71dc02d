"""The API under gunicorn as production runs it (DEBUG off), as a child process."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from database.reachability import database_url_for
from tests.processes import wait_until

PRODUCTION_LIKE = {
    "DJANGO_SETTINGS_MODULE": "jobsched_project.settings",
    "DEBUG": "0",
    "SECRET_KEY": "k3y-" + "production-like-secret-with-enough-entropy-0123456789abcdef",
    "JWT_VERIFYING_KEY": "test-only-jwt-secret-at-least-32-bytes-long",
    "ALLOWED_HOSTS": "jobsched.example.com",
    "SECURE_SSL_REDIRECT": "0",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def production_env(**extra: str) -> dict[str, str]:
    drop = {"DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "THROTTLE_CACHE_URL", "PROMETHEUS_MULTIPROC_DIR"}
    base = {k: v for k, v in os.environ.items() if k not in drop}
    return {**base, **PRODUCTION_LIKE, "DATABASE_URL": database_url_for(), **extra}


def get(url: str, *, host: str = "jobsched.example.com", headers: dict[str, str] | None = None):
    """(status, headers, body) of a GET; HTTP errors are answers too."""
    request = urllib.request.Request(url, headers={"Host": host, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


@contextlib.contextmanager
def gunicorn(env: dict[str, str], log_path: Path, *, workers: int = 1) -> Iterator[str]:
    """Run `gunicorn -c gunicorn.conf.py` until the block ends; yields its base URL."""
    port = free_port()
    env = {**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(workers)}
    command = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "jobsched_project.wsgi"]
    with open(log_path, "w") as out:
        child = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(base) or child.poll() is not None, timeout=60, what="gunicorn answering")
        assert child.poll() is None, log_path.read_text()
        yield base
    finally:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _answers(base: str) -> bool:
    try:
        return get(f"{base}/healthz")[0] == 200
    except OSError:
        return False
