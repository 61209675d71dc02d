"""HTTP/1.1 connections: a pool of our own, dialled through the egress check.

One protocol per socket, answers parsed with httptools (llhttp, the parser Node.js ships),
one future resolved per call (docs/benchmarks/notes.md, "Executor CPU", chose this over aiohttp's pool and
reader). The dial (`outbound.dialer`): the vetting resolver for names, the vetted socket
factory for every address aiohappyeyeballs connects to (IP literals included), TLS verifying
the URL's host name. A connection goes back to the pool only after a whole answer that keeps
it alive; one that hears anything while idle (an answer nobody asked for) is closed, never
read for the next call, which may be another tenant's.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections import deque
from typing import Any, cast

import aiohappyeyeballs
import httptools

from outbound.calling_tenant import CALLING_TENANT
from outbound.dialer import DialRefused, VettingResolver, vetted_socket_factory
from outbound.egress import EgressDenied, EgressPolicy
from outbound.resolvers import Resolver
from outbound.tenant_lookups import LookupLimits

# (tenant, scheme, host as sent to DNS and TLS, port): what a kept-alive connection can be reused for.
# The tenant first: a server may authenticate the connection, not the request (NTLM, a proxy's mTLS),
# so a connection one tenant opened would answer another tenant's call as the first.
Origin = tuple[str, str, str, int]
HAPPY_EYEBALLS_DELAY = 0.25  # seconds before the next address is tried, as aiohttp's connector
# Bytes of an answer that are not its body (status line, headers, interim heads, chunk framing,
# trailers): httptools joins a header's pieces by repeated appending, so an endless header would
# cost memory and CPU growing with its square. aiohttp refuses a field over 8,190 bytes.
MAX_HEAD_BYTES = 64 * 1024
# A chunk's framing (size line, CR LFs) is not the head's: each chunk header gives this much back,
# never below zero at the end of a read, so a body of many small chunks is not refused.
CHUNK_FRAMING_ALLOWANCE = 32
# A name's vetted addresses are reused this long, as aiohttp's connector caches them (ttl_dns_cache),
# and lookups of one name at once share one: warming 500 connections to a host is one lookup, not
# 500 on the loop's few resolver threads. Every address is still vetted again by the socket factory.
DNS_CACHE_SECONDS = 10.0
DNS_CACHE_NAMES = 4096


class DialFailed(ConnectionError):
    """No connection could be opened (refused, unreachable): the tenant reads "connection failed"."""


class AnswerError(Exception):
    """The endpoint's answer was not HTTP/1.1 we accept (malformed, cut short, an upgrade)."""


class ServerDisconnected(AnswerError):
    """The connection closed before a whole answer; `answered`: some of the answer had arrived."""

    def __init__(self, answered: bool) -> None:
        super().__init__("the connection closed before a whole answer")
        self.answered = answered


class Answer:
    """What one call read: the status, Retry-After as sent, up to the window of the (decoded) body."""

    __slots__ = ("body", "retry_after", "reusable", "status")

    def __init__(self, status: int, retry_after: str | None, body: bytes, reusable: bool) -> None:
        self.status = status
        self.retry_after = retry_after
        self.body = body
        self.reusable = reusable


class Connection(asyncio.Protocol):
    """One socket: writes a request, feeds the answer to httptools, resolves the call's future once."""

    def __init__(self, pool: ConnectionPool, origin: Origin, decoder_factory: Any) -> None:
        self.origin = origin
        self.closed = False
        self.idle_since = 0.0
        self._pool = pool
        self._decoder_factory = decoder_factory
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        # A bare LF ends a line, as aiohttp's parser takes it; every other leniency stays off (smuggling).
        self._parser.set_dangerous_leniencies(lenient_optional_cr_before_lf=True)
        self._waiter: asyncio.Future[Answer] | None = None
        self._reset(window=0, head_only=False)

    def _reset(self, *, window: int, head_only: bool) -> None:
        self._window = window
        self._head_only = head_only
        self._status = 0  # the final answer's, once its head is complete
        self._interim = False
        self._retry_after: str | None = None
        self._encoding = ""
        self._framed = False  # a Content-Length or chunked: the close does not end the body
        self._decoder: Any = None
        self._chunks: list[bytes] = []
        self._size = 0
        self._answered = False  # some byte of the answer arrived
        self._head_bytes = 0  # bytes fed that were not body (MAX_HEAD_BYTES)

    # -- the call ---------------------------------------------------------------------------

    async def exchange(self, message: bytes, *, window: int, head_only: bool) -> Answer:
        """Write the request; the answer once whole (or cut at `window` body bytes, then not reusable)."""
        assert self._waiter is None and self._transport is not None
        if self.closed:
            raise ServerDisconnected(answered=False)
        self._reset(window=window, head_only=head_only)
        self._waiter = waiter = asyncio.get_running_loop().create_future()
        self._transport.write(message)
        try:
            return await waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._transport is not None:
                self._transport.close()

    def _finish(self, reusable: bool) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(self._status, self._retry_after, b"".join(self._chunks), reusable))
        if not reusable:
            self.close()

    def _fail(self, exc: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # create_connection: a stream transport

    def data_received(self, data: bytes) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            self.close()  # bytes nobody asked for: this connection is never read again
            return
        self._answered = True
        self._head_bytes += len(data)  # on_body takes the body's bytes back out
        try:
            self._parser.feed_data(data)
            if self._head_bytes < 0:
                self._head_bytes = 0  # no credit carried to the next read
            elif self._head_bytes > MAX_HEAD_BYTES:
                self._fail(AnswerError("an answer's head or trailers too long"))
        except httptools.HttpParserUpgrade:
            if self._status:  # a final 101: reported as is, and the connection is not ours to reuse
                self._finish(reusable=False)
            else:
                self._fail(AnswerError("an upgrade"))
        except httptools.HttpParserError as exc:
            error = AnswerError("a malformed answer")
            error.__cause__ = exc  # with our own callback's error (a corrupt gzip body) as its context
            self._fail(error)

    def eof_received(self) -> bool | None:
        return None  # the transport closes; connection_lost ends or fails the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool.forget(self)
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._status and not self._framed and not self._interim:
            self._finish(reusable=False)  # an answer without a length ends at the close
        else:
            error = ServerDisconnected(answered=self._answered)
            error.__cause__ = exc  # a reset before any answer reads "connection failed", as on aiohttp
            self._fail(error)

    # -- httptools callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._status:  # a second answer after the whole first: never read it, never reuse
            self._finish(reusable=False)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._status:
            return  # a chunked answer's trailers: the head's values stand, as aiohttp reads them
        lowered = name.lower()
        if lowered == b"retry-after":
            if self._retry_after is None:  # the first, as aiohttp's headers.get
                self._retry_after = value.decode("latin-1")
        elif lowered == b"content-encoding":
            self._encoding = value.decode("latin-1")
        elif lowered == b"content-length":
            self._framed = True
        elif lowered == b"transfer-encoding":
            # Only a last coding of chunked frames the body; any other is read up to the close.
            self._framed = value.rsplit(b",", 1)[-1].strip().lower() == b"chunked"

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status <= 199 and status != 101:
            self._interim = True  # 1xx but 101: the answer follows on the same connection
            self._encoding, self._retry_after, self._framed = "", None, False
            return
        self._status = status
        if self._head_only:
            self._finish(reusable=False)  # httptools cannot be told a HEAD's answer has no body
        elif self._encoding:
            self._decoder = self._decoder_factory(self._encoding)

    def on_chunk_header(self) -> None:
        self._head_bytes -= CHUNK_FRAMING_ALLOWANCE

    def on_body(self, body: bytes) -> None:
        self._head_bytes -= len(body)
        if self._interim or self._waiter is None or self._waiter.done():
            return
        room = self._window - self._size
        chunk = self._decoder.decode(body, room) if self._decoder is not None else body[:room]
        if chunk:
            self._chunks.append(chunk)
            self._size += len(chunk)
        if self._size >= self._window:
            self._finish(reusable=False)  # the rest is never read: a huge answer costs us `window` bytes

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self._finish(reusable=self._parser.should_keep_alive())


def _default_tls() -> ssl.SSLContext:
    """The system's trust store, verifying the chain and the URL's host name; built at start, not on the loop."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])  # as aiohttp offers
    return context


class ConnectionPool:
    """Kept-alive connections by tenant and origin, at most `limit` in use (dialling included) and `limit` idle."""

    def __init__(
        self,
        *,
        policy: EgressPolicy,
        limit: int,
        keepalive_seconds: float,
        decoder_factory: Any,
        resolver: Resolver | None = None,
        lookups: LookupLimits | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.limit = limit
        self._lookup_limits = lookups
        self._keepalive = keepalive_seconds
        self._decoder_factory = decoder_factory
        self._policy = policy
        self._inner_resolver = resolver
        self._resolver: VettingResolver | None = None  # built in the loop: c-ares' resolver binds to it
        self._socket_factory = vetted_socket_factory(policy)
        self._ssl = ssl_context or _default_tls()
        self._idle: dict[Origin, list[Connection]] = {}
        self._idle_count = 0
        self._in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._sweep: asyncio.TimerHandle | None = None
        # (host, port) -> [expires at, the vetted addresses, the next to try first]
        self._names: dict[tuple[str, int], list[Any]] = {}
        self._lookups: dict[tuple[str, str, int], asyncio.Task[list[aiohappyeyeballs.AddrInfoType]]] = {}
        self.lookups = 0  # names resolved (not from the cache), for the tests
        self.dialled = 0  # connections opened, for the tests and the warm-up's count

    async def acquire(self, origin: Origin) -> tuple[Connection, bool]:
        """An idle connection to `origin` (newest first) or a new one; True when reused. Waits at the limit.

        A new connection's name is looked up before it takes room in the pool: a lookup that
        hangs (until its timeout) holds no slot another tenant's call is waiting for.
        """
        loop = asyncio.get_running_loop()
        woken = False
        infos: list[aiohappyeyeballs.AddrInfoType] | None = None
        while True:
            if self._in_use < self.limit:
                idle = self._idle.get(origin)
                while idle:
                    connection = idle.pop()
                    self._idle_count -= 1
                    if not idle:
                        del self._idle[origin]
                    if connection.closed or loop.time() - connection.idle_since > self._keepalive:
                        connection.close()
                        continue
                    self._in_use += 1
                    return connection, True
                if infos is not None:
                    break
            if infos is None:
                _, _, host, port = origin
                infos = await self._addresses(host, port)  # no room held (and none waited for) meanwhile
                continue
            waiter = loop.create_future()
            # Woken, but another took the room first (a retry, a task already running): first in line again.
            (self._waiters.appendleft if woken else self._waiters.append)(waiter)
            try:
                await waiter
                woken = True
            except BaseException:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # woken and cancelled at once: the room goes to the next in line
                raise
        self._in_use += 1
        try:
            connection = await self._dial(origin, infos)
        except BaseException:
            self._in_use -= 1
            self._wake()
            raise
        return connection, False

    def release(self, connection: Connection, *, reusable: bool) -> None:
        """Back to the pool after a whole answer that keeps it alive; closed otherwise."""
        self._in_use -= 1
        if reusable and not connection.closed:
            if self._idle_count >= self.limit:
                self._evict_oldest()  # the least recently used of any origin, not the one just used
            loop = asyncio.get_running_loop()
            connection.idle_since = loop.time()
            self._idle.setdefault(connection.origin, []).append(connection)
            self._idle_count += 1
            if self._sweep is None:
                self._sweep = loop.call_later(self._keepalive, self._close_expired)
        else:
            connection.close()
        self._wake()

    def _evict_oldest(self) -> None:
        origin = min(self._idle, key=lambda key: self._idle[key][0].idle_since)  # lists are never empty
        idle = self._idle[origin]
        connection = idle.pop(0)
        self._idle_count -= 1
        if not idle:
            del self._idle[origin]
        connection.close()

    def forget(self, connection: Connection) -> None:
        """A connection closed (by either side): out of the idle lists if it was there."""
        idle = self._idle.get(connection.origin)
        if idle and connection in idle:
            idle.remove(connection)
            self._idle_count -= 1
            if not idle:
                del self._idle[connection.origin]

    async def aclose(self) -> None:
        """Close every idle connection (at shutdown none is in use) and the resolver."""
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for idle in list(self._idle.values()):
            for connection in list(idle):
                connection.close()
        self._idle.clear()
        self._idle_count = 0
        for lookup in list(self._lookups.values()):
            lookup.cancel()
        if self._resolver is not None:
            await self._resolver.close()
            self._resolver = None

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _close_expired(self) -> None:
        loop = asyncio.get_running_loop()
        self._sweep = None
        expired_before = loop.time() - self._keepalive
        for origin, idle in list(self._idle.items()):
            for connection in [c for c in idle if c.idle_since <= expired_before]:
                connection.close()  # connection_lost (soon) forgets it; out of the list now
                idle.remove(connection)
                self._idle_count -= 1
            if not idle:
                del self._idle[origin]
        if self._idle_count:
            self._sweep = loop.call_later(self._keepalive / 2, self._close_expired)

    async def _dial(self, origin: Origin, infos: list[aiohappyeyeballs.AddrInfoType]) -> Connection:
        _, scheme, host, _ = origin
        loop = asyncio.get_running_loop()
        try:
            sock = await aiohappyeyeballs.start_connection(
                infos, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY, socket_factory=self._socket_factory
            )
        except (DialRefused, EgressDenied):
            raise
        except OSError as exc:
            raise DialFailed("connection failed") from exc
        tls = self._ssl if scheme == "https" else None
        try:
            _, connection = await loop.create_connection(
                lambda: Connection(self, origin, self._decoder_factory),
                sock=sock,
                ssl=tls,
                # Without a trailing dot, as aiohttp verifies it: `example.com.` is example.com's certificate.
                server_hostname=host.rstrip(".") if tls is not None else None,
            )
        except OSError as exc:  # refused TLS (an unverified certificate) too: the tenant reads "connection failed"
            sock.close()
            raise DialFailed("connection failed") from exc
        except BaseException:
            sock.close()
            raise
        self.dialled += 1
        return connection

    async def _addresses(self, host: str, port: int) -> list[aiohappyeyeballs.AddrInfoType]:
        """Where to dial: an IP literal as is (the socket factory still vets it), a name by the vetting resolver."""
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            return await self._named(host, port)
        if literal.version == 6:
            return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port, 0, 0))]
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (host, port))]

    async def _named(self, host: str, port: int) -> list[aiohappyeyeballs.AddrInfoType]:
        """A name's vetted addresses: cached for DNS_CACHE_SECONDS, one lookup at a time per name."""
        loop = asyncio.get_running_loop()
        key = (host, port)
        cached = self._names.get(key)
        if cached is not None and cached[0] > loop.time():
            _, infos, first = cached
            cached[2] = (first + 1) % len(infos)  # each dial starts at the next address, as aiohttp rotates them
            return infos[first:] + infos[:first]
        # One lookup at a time per tenant and name: a lookup runs under its caller's tenant (its cap,
        # its failures), so another tenant waiting on it would take on that tenant's refusal.
        lookup_key = (CALLING_TENANT.get(), host, port)
        lookup = self._lookups.get(lookup_key)
        if lookup is None:
            lookup = loop.create_task(self._lookup(host, port))
            self._lookups[lookup_key] = lookup
            lookup.add_done_callback(functools.partial(self._looked_up, lookup_key))
        # Shielded: one caller's timeout does not cancel the lookup the others wait for.
        return await asyncio.shield(lookup)

    def _looked_up(self, key: tuple[str, str, int], lookup: asyncio.Task[Any]) -> None:
        self._lookups.pop(key, None)
        if not lookup.cancelled():
            lookup.exception()  # retrieved: every waiter may have gone (timed out) before it failed

    async def _lookup(self, host: str, port: int) -> list[aiohappyeyeballs.AddrInfoType]:
        if self._resolver is None:
            self._resolver = VettingResolver(self._policy, self._inner_resolver, self._lookup_limits)
        self.lookups += 1
        answers = await self._resolver.resolve(host, port, family=socket.AF_UNSPEC)  # refusals are not cached
        infos: list[aiohappyeyeballs.AddrInfoType] = [
            (
                answer["family"],
                socket.SOCK_STREAM,
                answer["proto"],
                "",
                (answer["host"], answer["port"], 0, 0)
                if answer["family"] == socket.AF_INET6
                else (answer["host"], answer["port"]),
            )
            for answer in answers
        ]
        now = asyncio.get_running_loop().time()
        if len(self._names) >= DNS_CACHE_NAMES:
            self._names = {key: entry for key, entry in self._names.items() if entry[0] > now}
            if len(self._names) >= DNS_CACHE_NAMES:
                self._names.clear()  # a bound on distinct names; refilled as they recur
        if infos:
            self._names[(host, port)] = [now + DNS_CACHE_SECONDS, infos, 1 % len(infos)]  # this dial took the first
        return infos
