"""Real HTTP endpoints on 127.0.0.1 for executor tests, each in its own thread and event loop.

`Receiver` records every request and answers by path: `/status/<code>` (3xx
answers carry `Location: /landed`), `/slow/<seconds>`, `/big/<bytes>`,
`/trickle/<seconds>` (a body one byte per 0.1 s), `/retry-after/<code>/<value>` (that status with
that Retry-After), `/hang-on-attempt/<n>` (never
answers attempt n), `/echo-headers` (the request's headers as the body),
`/landed`, `/set-cookie/<value>` (answers `Set-Cookie: sid=<value>`), `/gzip-bomb/<MiB>` (that many
MiB of zeros, gzip-compressed, `Content-Encoding: gzip`), `/echo-secret/<form>` (the request's
`Authorization` back as `raw`, `json`, `url`, `base64`, `base64url` or `blob`: base64 of a JSON
document holding it), `/echo-secret-at/<offset>` (`offset` bytes of padding, then the `Authorization`),
anything else 200 "ok". `connections` counts the connections it accepted.
`ConnectionTrap` is a bare TCP listener that only counts accepted connections:
the proof that nothing dialled an address the egress check refused.

Stopping a server cancels every handler still running (a `/hang-on-attempt` or
`/slow` call the test no longer waits for) and waits for them, so no task is
left pending in a loop that outlives the test: that was the "Task was destroyed
but it is pending!" the suite printed at exit. `stop()` fails loudly if the
server thread does not end.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import quote, unquote

from aiohttp import web
from multidict import CIMultiDict


@dataclass
class Received:
    method: str
    path: str
    headers: CIMultiDict[str]  # case-insensitive, as HTTP header names are
    body: bytes
    at: float  # time.time() on arrival


@dataclass
class _Served:
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    thread: threading.Thread | None = None
    ready: threading.Event = field(default_factory=threading.Event)


@lru_cache(maxsize=4)
def gzip_bomb(mebibytes: int) -> bytes:
    """`mebibytes` MiB of zeros, gzip-compressed (about 1/1000 of that on the wire)."""
    return gzip.compress(b"\0" * (mebibytes * 1024 * 1024), compresslevel=9)


def _secret_echo(secret: str, form: str) -> str:
    if form == "json":
        return json.dumps({"seen": {"authorization": secret}})
    if form == "url":
        return "https://example.com/seen?authorization=" + quote(secret, safe="")
    if form == "base64":
        return base64.b64encode(secret.encode()).decode()
    if form == "base64url":
        return base64.urlsafe_b64encode(secret.encode()).decode()
    if form == "blob":
        return base64.b64encode(json.dumps({"headers": {"Authorization": secret}}).encode()).decode()
    return secret


class _ThreadServer:
    """Run an asyncio server in a daemon thread; subclasses implement `_start` / `_stop`."""

    host = "127.0.0.1"
    stop_timeout = 10.0

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self._served = _Served()
        self._error: BaseException | None = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        served = self._served

        def main() -> None:
            asyncio.set_event_loop(served.loop)
            try:
                served.loop.run_until_complete(self._start())
            except BaseException as exc:  # surfaced to the test by start()
                self._error = exc
                served.ready.set()
                return
            served.ready.set()
            served.loop.run_forever()
            try:
                served.loop.run_until_complete(self._stop())
            finally:
                _cancel_remaining_tasks(served.loop)
                served.loop.run_until_complete(served.loop.shutdown_asyncgens())
                served.loop.close()

        served.thread = threading.Thread(target=main, name=f"{type(self).__name__}-{self.port}", daemon=True)
        served.thread.start()
        served.ready.wait(10)
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        served = self._served
        if served.thread is not None and served.thread.is_alive():
            served.loop.call_soon_threadsafe(served.loop.stop)
            served.thread.join(self.stop_timeout)
            if served.thread.is_alive():
                raise AssertionError(f"{served.thread.name} did not stop within {self.stop_timeout} s")

    async def _start(self) -> None:
        raise NotImplementedError

    async def _stop(self) -> None:
        raise NotImplementedError


def _cancel_remaining_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is still pending in `loop` and let it unwind, as `asyncio.run` does at its end."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


class Receiver(_ThreadServer):
    """An aiohttp app that records requests; `url("/status/503")` gives a full URL."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.requests: list[Received] = []
        self.connections = 0  # accepted so far
        self._lock = threading.Lock()
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        with self._lock:
            self.requests.append(
                Received(request.method, request.path, CIMultiDict(request.headers), body, time.time())
            )
        parts = request.path.strip("/").split("/")
        if parts[0] == "status" and len(parts) == 2:
            code = int(parts[1])
            headers = {"Location": "/landed"} if 300 <= code < 400 else {}
            return web.Response(status=code, text=f"answered {code}", headers=headers)
        if parts[0] == "retry-after" and len(parts) == 3:  # /retry-after/<code>/<header value, URL-quoted>
            return web.Response(status=int(parts[1]), text="later", headers={"Retry-After": unquote(parts[2])})
        if parts[0] == "slow" and len(parts) == 2:
            await asyncio.sleep(float(parts[1]))
            return web.Response(text="slow ok")
        if parts[0] == "hang-on-attempt" and len(parts) == 2:
            if request.headers.get("X-Attempt") == parts[1]:
                await asyncio.sleep(3600)  # until the caller gives up or dies
            return web.Response(text="ok")
        if parts[0] == "trickle" and len(parts) == 2:
            response = web.StreamResponse()
            await response.prepare(request)  # the status line and headers go out at once
            for _ in range(int(float(parts[1]) * 10)):
                await response.write(b"x")
                await asyncio.sleep(0.1)
            return response
        if parts[0] == "echo-headers":
            return web.Response(text="\n".join(f"{name}: {value}" for name, value in request.headers.items()))
        if parts[0] == "set-cookie" and len(parts) == 2:
            return web.Response(text="cookie set", headers={"Set-Cookie": f"sid={parts[1]}; Path=/"})
        if parts[0] == "gzip-bomb" and len(parts) == 2:
            return web.Response(body=gzip_bomb(int(parts[1])), headers={"Content-Encoding": "gzip"})
        if parts[0] == "echo-secret" and len(parts) == 2:
            return web.Response(text=_secret_echo(request.headers.get("Authorization", ""), parts[1]))
        if parts[0] == "echo-secret-at" and len(parts) == 2:
            return web.Response(text="p" * int(parts[1]) + request.headers.get("Authorization", "") + "\nend")
        if parts[0] == "big" and len(parts) == 2:
            return web.Response(body=b"x" * int(parts[1]))
        return web.Response(text="ok")

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # In-flight handlers get 1 s at shutdown (aiohttp's default waits 60 s for a hanging one), then are cancelled.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        server = self._runner.server
        assert server is not None

        def protocol() -> asyncio.Protocol:
            self.connections += 1  # every accepted connection, whether a request follows or not
            return server()

        self._listener = await asyncio.get_running_loop().create_server(protocol, self.host, self.port)
        self.port = self._listener.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._runner is not None:
            await self._runner.cleanup()


class _StreamServer(_ThreadServer):
    """A raw asyncio stream server; subclasses implement `_on_connect` and count `connections`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._on_connect, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class ConnectionTrap(_StreamServer):
    """A listener that counts connections and closes them at once."""

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


class ScriptedServer(_StreamServer):
    """A TCP server whose handler gets (reader, writer, connection number) and writes what it likes."""

    def __init__(self, handler) -> None:
        super().__init__()
        self.handler = handler

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self.connections)
        finally:
            writer.close()


def unused_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on (bound, then released): connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
