"""Name lookups for the egress check: what a failed lookup means, and the API's bounded resolver.

Two outcomes of a failed lookup are told apart, at create time and dial time alike:

- ``NameNotFound``: the name has no address (NXDOMAIN, or no A/AAAA record). At create time
  the URL is accepted (the dial-time check decides); at dial time the call is refused.
- ``LookupUnfinished``: the lookup timed out, could not run (too many in flight) or the
  resolver failed. Never taken as "resolved to nothing": a name that resolves to 127.0.0.1
  must not pass the create-time check because the resolver was busy.

``NameResolver`` is the API's create-time resolver: c-ares (pycares) on its own thread, so a
lookup holds no thread of a pool (getaddrinfo on four threads let four hanging names stall
every other lookup), with a timeout of its own and a bound on lookups in flight.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from typing import Any

import pycares

__all__ = ["LookupUnfinished", "NameNotFound", "NameResolver", "lookup_failure", "parse_nameservers"]

# c-ares' answers that say the name has no address; every other error says nothing about the name.
_NOT_FOUND_CODES = frozenset({pycares.errno.ARES_ENOTFOUND, pycares.errno.ARES_ENODATA})
# The system resolver's (a test's fake, or getaddrinfo) answers that mean the same.
_NOT_FOUND_GAI = frozenset({socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)})


class NameNotFound(OSError):
    """The name has no address: NXDOMAIN, or no A/AAAA record."""


class LookupUnfinished(ConnectionError):
    """The lookup did not finish (timed out, too many in flight, resolver error): nothing is known."""


def lookup_failure(exc: BaseException) -> NameNotFound | LookupUnfinished:
    """What a resolver's exception means: `NameNotFound` only when the answer says so."""
    if isinstance(exc, NameNotFound | LookupUnfinished):
        return exc
    code = _ares_code(exc)
    if code is not None:
        text = pycares.errno.strerror(code)
        return NameNotFound(text) if code in _NOT_FOUND_CODES else LookupUnfinished(text)
    if isinstance(exc, socket.gaierror) and exc.errno in _NOT_FOUND_GAI:
        return NameNotFound(str(exc))
    if isinstance(exc, UnicodeError | ValueError):
        return NameNotFound(f"not a name a resolver takes: {exc}")  # the same on every try
    if isinstance(exc, TimeoutError):
        return LookupUnfinished("the lookup timed out")
    return LookupUnfinished(f"the lookup failed: {type(exc).__name__}")


def _ares_code(exc: BaseException) -> int | None:
    """The c-ares error code in `exc` or its cause (the executor's resolver raises OSError from aiodns' DNSError)."""
    for seen in (exc, exc.__cause__):
        if isinstance(seen, pycares.AresError) or type(seen).__name__ == "DNSError":
            args = getattr(seen, "args", ())
            if args and isinstance(args[0], int):
                return args[0]
    return None


def parse_nameservers(text: str) -> tuple[str, ...]:
    """`DNS_NAMESERVERS`: comma-separated `address` or `address:port` (`[v6]:port`); empty: the system's."""
    servers = tuple(part.strip() for part in text.split(",") if part.strip())
    for server in servers:
        host = server
        if server.startswith("["):
            host = server[1:].partition("]")[0]
        elif server.count(":") == 1:
            host, _, port = server.partition(":")
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"bad port in {server!r}")
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
        except OSError:
            raise ValueError(f"{server!r} is not an IP address (a name server is given by address)") from None
    return servers


def ares_channel_options(nameservers: Iterable[str], timeout_seconds: float) -> dict[str, Any]:
    """c-ares' options for a lookup bounded by `timeout_seconds`: two tries, the second given twice as long."""
    options: dict[str, Any] = {"timeout": timeout_seconds / 3, "tries": 2}
    servers = list(nameservers)
    if servers:
        options["servers"] = servers
    return options


class NameResolver:
    """Resolve with c-ares, at most `max_in_flight` at once, each for at most `timeout_seconds`.

    Callable as an ``egress.Resolver``: (host, port) -> addresses. Raises ``NameNotFound``
    or ``LookupUnfinished``; a lookup over the bound is refused at once (never queued behind
    the hanging ones), and the caller decides what a refusal means (the API: 503).
    """

    def __init__(self, *, nameservers: Iterable[str] = (), timeout_seconds: float = 2.0, max_in_flight: int = 32):
        self.timeout_seconds = timeout_seconds
        self._slots = threading.BoundedSemaphore(max_in_flight)
        # pycares 5 runs c-ares on its own event thread and calls back from it.
        self._channel = pycares.Channel(**ares_channel_options(nameservers, timeout_seconds))

    def __call__(self, host: str, port: int) -> list[str]:
        if not self._slots.acquire(blocking=False):
            raise LookupUnfinished("too many lookups in flight")
        try:
            done = threading.Event()
            outcome: list[Any] = []

            def answered(result: Any, error: int | None) -> None:
                outcome.append((result, error))
                done.set()

            try:
                self._channel.getaddrinfo(
                    host, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM, callback=answered
                )
            except (pycares.AresError, UnicodeError, ValueError, TypeError) as exc:
                raise lookup_failure(exc) from None
            # c-ares gives up on its own at about the same time; a late answer goes to a callback nobody reads.
            if not done.wait(self.timeout_seconds):
                raise LookupUnfinished("the lookup timed out")
        finally:
            self._slots.release()
        result, error = outcome[0]
        if error is not None:
            raise lookup_failure(pycares.AresError(error, pycares.errno.strerror(error)))
        addresses = [
            node.addr[0].decode("ascii") if isinstance(node.addr[0], bytes) else str(node.addr[0])
            for node in result.nodes
        ]
        if not addresses:
            raise NameNotFound("no address")
        return addresses
