"""A Redis for the Celery comparison: the one at the URL if it answers, else our own.

Our own is Debian's `redis-server` (scripts/os-packages.sh bench installs it)
on the URL's loopback port, with its files under `.local/redis/` (ignored by
git), no persistence; it is stopped when the bench ends. A server that already
answers is used as it is and never stopped.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import redis

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class RedisServer:
    def __init__(self, url: str, *, data_dir: Path) -> None:
        self.url = url
        self.data_dir = data_dir
        self.process: subprocess.Popen[bytes] | None = None

    def answers(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.5).ping())
        except redis.exceptions.ConnectionError:
            return False

    def ensure(self) -> bool:
        """Make the URL answer; True when we started the server (and so must stop it)."""
        if self.answers():
            return False
        parts = urlsplit(self.url)
        if parts.hostname not in LOOPBACK:
            raise RuntimeError(f"no Redis answers at {self.url}, and it is not on loopback: start it yourself")
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).exists():
            raise RuntimeError("redis-server is not installed: scripts/os-packages.sh bench installs it")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "redis.log", "wb")  # noqa: SIM115 - the child keeps its own descriptor
        self.process = subprocess.Popen(
            [
                binary,
                "--bind", "127.0.0.1",
                "--port", str(parts.port or 6379),
                "--dir", str(self.data_dir.resolve()),
                "--save", "",
                "--appendonly", "no",
                "--protected-mode", "yes",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + 20
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start; see {self.data_dir / 'redis.log'}")
            time.sleep(0.05)
        return True

    @property
    def pid(self) -> int | None:
        if self.process is not None:
            return self.process.pid
        try:
            return int(redis.Redis.from_url(self.url).info("server")["process_id"])
        except (redis.exceptions.RedisError, KeyError, ValueError):
            return None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
