"""A worker's `/metrics` and `/healthz` on `--metrics-port`, from a heartbeat its loop refreshes.

The loop calls `beat()` after every iteration and `database_failed()` /
`database_answered()` as its steps fail or succeed. `/healthz` is 503 when the
loop has not iterated for `stuck_after` seconds (a hung call, a deadlock, a
blocked event loop) or when the database has been unreachable for
`db_unreachable_after` seconds (the loop backs off and would otherwise look
alive forever); Kubernetes' liveness probe then restarts the container. The
server runs on its own daemon thread, so it answers while the loop waits.

It has no authentication, so it is bounded like anything reachable from outside:
it listens on WORKER_METRICS_HOST (loopback unless told otherwise), a connection
idle or slow for WORKER_METRICS_TIMEOUT_SECONDS is closed, and at most
WORKER_METRICS_MAX_CONNECTIONS are served at once (each holds a thread); past
that a new connection is closed at once (300 idle connections held 300 threads).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.conf import settings

from api.prometheus import exposition
from workers.metrics import (
    DB_ERRORS,
    DB_UNREACHABLE_SINCE,
    LOOP_ITERATIONS,
    LOOP_LAST_ITERATION,
    METRICS_CONNECTIONS_REFUSED,
)

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


class _CappedServer(ThreadingHTTPServer):
    """A thread per connection, but at most `max_connections` of them: past that, close at once."""

    daemon_threads = True
    # Connections waiting in the kernel cost no thread; a short queue made clients past it wait
    # for SYN retransmits (seconds) instead of being accepted and closed at once.
    request_queue_size = 128

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], *, max_connections: int, deadline: float
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(max_connections)
        self._deadline = deadline
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            # Every slot holds a connection: a thread for this one is what let idle clients exhaust the process.
            METRICS_CONNECTIONS_REFUSED.inc()
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread started: nothing else will give the slot back
            raise

    def process_request_thread(self, request, client_address) -> None:
        # The whole connection's deadline: the handler's timeout bounds each read, so a client sending
        # a byte just inside it would hold its slot for ever (and the cap would refuse the kubelet).
        cut = threading.Timer(self._deadline, _shut, args=(request,))
        cut.daemon = True
        cut.start()
        try:
            super().process_request_thread(request, client_address)
        finally:
            cut.cancel()
            self._slots.release()


def _shut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the handler
        connection.shutdown(socket.SHUT_RDWR)


class HealthServer:
    """`/metrics` and `/healthz` on a daemon thread; `port=0` picks a free port (tests)."""

    def __init__(
        self,
        heartbeat: Heartbeat,
        *,
        port: int,
        host: str | None = None,
        timeout: float | None = None,
        max_connections: int | None = None,
    ) -> None:
        host = settings.WORKER_METRICS_HOST if host is None else host
        # Each read or write that waits longer ends the connection, and so does the connection lasting longer.
        timeout = settings.WORKER_METRICS_TIMEOUT_SECONDS if timeout is None else timeout
        handler = type("HeartbeatHandler", (_Handler,), {"heartbeat": heartbeat, "timeout": timeout})
        self._server = _CappedServer(
            (host, port),
            handler,
            max_connections=settings.WORKER_METRICS_MAX_CONNECTIONS if max_connections is None else max_connections,
            deadline=timeout,
        )
        host_bound, port_bound = self._server.server_address[:2]
        self.address = (str(host_bound), int(port_bound))  # port 0 becomes the port the system picked
        self.port = self.address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="health-server", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        logger.info(
            "metrics and health served",
            extra={"event": "metrics_server", "host": self.address[0], "port": self.port},
        )
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve_health(heartbeat: Heartbeat, port: int | None) -> HealthServer | None:
    """Start the server when a port is given (`--metrics-port`) on WORKER_METRICS_HOST; None otherwise."""
    return HealthServer(heartbeat, port=port).start() if port is not None else None
