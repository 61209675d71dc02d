"""A worker's `/metrics` and `/healthz` on `--metrics-port`, from a heartbeat its loop refreshes.

The loop calls `beat()` after every iteration and `database_failed()` /
`database_answered()` as its steps fail or succeed. `/healthz` is 503 when the
loop has not iterated for `stuck_after` seconds (a hung call, a deadlock, a
blocked event loop) or when the database has been unreachable for
`db_unreachable_after` seconds (the loop backs off and would otherwise look
alive forever); Kubernetes' liveness probe then restarts the container. The
server runs on its own daemon thread, so it answers while the loop waits.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings

from jobsched_project.metrics import exposition
from workers.metrics import DB_ERRORS, DB_UNREACHABLE_SINCE, LOOP_ITERATIONS, LOOP_LAST_ITERATION

logger = logging.getLogger(__name__)


class Heartbeat:
    """What `/healthz` reports; every method is safe from any thread (single attribute writes)."""

    def __init__(
        self,
        loop: str,
        *,
        stuck_after: float | None = None,
        db_unreachable_after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.loop = loop
        self.stuck_after = stuck_after if stuck_after is not None else settings.WORKER_STUCK_SECONDS
        self.db_unreachable_after = (
            db_unreachable_after if db_unreachable_after is not None else settings.WORKER_DB_UNREACHABLE_SECONDS
        )
        self.clock = clock
        self.last_beat = clock()  # starting counts as a beat: the first iteration may take a while
        self.db_down_since: float | None = None
        DB_UNREACHABLE_SINCE.labels(loop).set(0)

    def beat(self) -> None:
        self.last_beat = self.clock()
        LOOP_ITERATIONS.labels(self.loop).inc()
        LOOP_LAST_ITERATION.labels(self.loop).set_to_current_time()

    def database_failed(self) -> None:
        DB_ERRORS.labels(self.loop).inc()
        if self.db_down_since is None:
            self.db_down_since = self.clock()
            DB_UNREACHABLE_SINCE.labels(self.loop).set_to_current_time()

    def database_answered(self) -> None:
        if self.db_down_since is not None:
            self.db_down_since = None
            DB_UNREACHABLE_SINCE.labels(self.loop).set(0)

    def status(self) -> tuple[bool, dict[str, object]]:
        now = self.clock()
        since_beat = now - self.last_beat
        down_for = None if self.db_down_since is None else now - self.db_down_since
        problems = []
        if since_beat > self.stuck_after:
            problems.append(f"no loop iteration for {since_beat:.1f} s (limit {self.stuck_after:g} s)")
        if down_for is not None and down_for > self.db_unreachable_after:
            problems.append(f"database unreachable for {down_for:.1f} s (limit {self.db_unreachable_after:g} s)")
        body: dict[str, object] = {
            "status": "unhealthy" if problems else "ok",
            "loop": self.loop,
            "seconds_since_iteration": round(since_beat, 3),
            "database_unreachable_seconds": None if down_for is None else round(down_for, 3),
        }
        if problems:
            body["problems"] = problems
        return not problems, body


class _Handler(BaseHTTPRequestHandler):
    heartbeat: Heartbeat  # set on the subclass made per server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            body, content_type = exposition()
            self._send(200, body, content_type)
        elif path == "/healthz":
            healthy, status = self.heartbeat.status()
            self._send(200 if healthy else 503, json.dumps(status).encode(), "application/json")
        else:
            self._send(404, b'{"status": "not found"}', "application/json")

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # a probe every few seconds is not worth a log line


class HealthServer:
    """`/metrics` and `/healthz` on a daemon thread; `port=0` picks a free port (tests)."""

    def __init__(self, heartbeat: Heartbeat, *, port: int, host: str = "0.0.0.0") -> None:
        handler = type("HeartbeatHandler", (_Handler,), {"heartbeat": heartbeat})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="health-server", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        logger.info("metrics and health served", extra={"event": "metrics_server", "port": self.port})
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve_health(heartbeat: Heartbeat, port: int | None) -> HealthServer | None:
    """Start the server when a port is given (`--metrics-port`); None otherwise."""
    return HealthServer(heartbeat, port=port).start() if port is not None else None
