"""A TCP proxy in front of the test database that a test can cut and restore: the database "goes away".

Workers under test connect through it (`url`); `cut()` drops every proxied
connection and stops listening (new connections are refused, as with a database
that is down), `restore()` listens again on the same port. Plain threads and
sockets: nothing here runs in an event loop.

With `answer_delay`, each chunk of the server's answers waits that long before it is passed on,
and `round_trips` counts the client's turns: the chunks it sends after an answer reached it.
Statements written together (pipelined) before any answer is one turn.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from django.conf import settings

from database.reachability import database_url_for


class DatabaseProxy:
    def __init__(self, *, answer_delay: float = 0.0) -> None:
        db = settings.DATABASES["default"]
        self.target = (db["HOST"] or "127.0.0.1", int(db["PORT"] or 3306))
        self.port = 0
        self.answer_delay = answer_delay
        self.round_trips = 0
        self._answers = 0
        self._answers_at_last_turn = -1
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        """The test database's URL, through the proxy."""
        host, port = self.target
        return database_url_for().replace(f"@{host}:{port}/", f"@127.0.0.1:{self.port}/")

    def __enter__(self) -> DatabaseProxy:
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="db-proxy-accept", daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and drop the open ones."""
        listener, self._listener = self._listener, None
        if listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone leaves it listening on Linux.
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            doomed, self._sockets = self._sockets, set()
        for sock in doomed:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by cut()
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets |= {client, upstream}
            for source, sink, answers in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(
                    target=self._pipe, args=(source, sink, answers), name="db-proxy-pipe", daemon=True
                ).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if answers:
                    time.sleep(self.answer_delay)
                    with self._lock:  # counted before the client can read it and send again
                        self._answers += 1
                    sink.sendall(chunk)
                    continue
                with self._lock:
                    if self._answers != self._answers_at_last_turn:
                        self.round_trips += 1
                        self._answers_at_last_turn = self._answers
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
