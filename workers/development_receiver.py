"""The development receiver `make run` starts: an endpoint on 127.0.0.1 for a first task to call.

It prints one line per call (method, path, the job's Idempotency-Key, attempt, scheduled time,
whether it was signed, the body's first bytes) and answers 200, or the status a `?status=`
query asks for (to watch retries and the dead-letter queue). A repeated Idempotency-Key is
reported as a repeat and still answered 200, as a receiver should (docs: receiving calls).
Development only: it is never part of a deployment.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

logger = logging.getLogger(__name__)

MAX_BODY_SHOWN = 200
MAX_KEYS_KEPT = 10_000


class _Handler(BaseHTTPRequestHandler):
    server: DevelopmentReceiver

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 1 << 20)) if length else b""
        key = self.headers.get("Idempotency-Key", "")
        repeat = self.server.seen(key) if key else False
        query = parse_qs(urlsplit(self.path).query)
        status = int(query.get("status", ["200"])[0]) if query.get("status", [""])[0].isdigit() else 200
        shown = body[:MAX_BODY_SHOWN].decode("utf-8", "replace")
        self.server.print(
            f"receiver: {self.command} {self.path} job={key or '-'} attempt={self.headers.get('X-Attempt', '-')} "
            f"scheduled_at={self.headers.get('X-Scheduled-At', '-')} "
            f"signed={'yes' if self.headers.get('webhook-signature') else 'no'}"
            f"{' repeat' if repeat else ''} -> {status} body={shown!r}"
        )
        payload = b'{"received": true}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _answer

    def log_message(self, format: str, *args: object) -> None:
        return  # one line per call, printed by _answer


class DevelopmentReceiver(ThreadingHTTPServer):
    """A threading HTTP server that remembers the Idempotency-Keys it has seen."""

    daemon_threads = True

    def __init__(self, host: str, port: int, *, out) -> None:
        super().__init__((host, port), _Handler)
        self._out = out
        self._keys: dict[str, None] = {}
        self._lock = threading.Lock()

    def seen(self, key: str) -> bool:
        with self._lock:
            if key in self._keys:
                return True
            self._keys[key] = None
            if len(self._keys) > MAX_KEYS_KEPT:
                del self._keys[next(iter(self._keys))]
            return False

    def print(self, line: str) -> None:
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()
