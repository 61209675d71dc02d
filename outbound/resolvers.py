"""What the executor's dial asks of a name resolver, and c-ares' answer (aiodns on the event loop).

The interface is aiohttp's (`resolve(host, port, family)` -> a list of `ResolveResult`), so
any of aiohttp's resolvers still plugs in (the tests do). The executor itself imports no
aiohttp: importing it builds aiohttp's whole client and two TLS contexts, for one small class
(the cost: docs/benchmarks/issue33-morning.md).
"""

from __future__ import annotations

import socket
from typing import Protocol, TypedDict

import aiodns

# The answer's address and port are numbers, never names to look up again.
NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


class ResolveResult(TypedDict):
    """One address of a name, as aiohttp's `ResolveResult` holds it."""

    hostname: str
    host: str
    port: int
    family: int
    proto: int
    flags: int


class Resolver(Protocol):
    """A name's addresses for a dial; raises `OSError` (or the egress lookup errors) when it has none."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]: ...

    async def close(self) -> None: ...


class AresResolver:
    """c-ares through aiodns, asked as aiohttp's `AsyncResolver` asks it; built inside the event loop.

    aiohttp also asks getnameinfo for the zone of an IPv6 answer that carries a scope id; an
    answer from DNS carries none, so that branch is left out.
    """

    def __init__(self, *, nameservers: list[str] | None = None, timeout: float, tries: int) -> None:
        self._resolver = aiodns.DNSResolver(nameservers=nameservers, timeout=timeout, tries=tries)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            answer = await self._resolver.getaddrinfo(
                host, family=family, port=port, type=socket.SOCK_STREAM, flags=socket.AI_ADDRCONFIG
            )
        except aiodns.error.DNSError as exc:
            # The c-ares code stays on the cause: `egress.lookup_failure` reads "not found" from it.
            raise OSError(None, exc.args[1] if len(exc.args) > 1 else "DNS lookup failed") from exc
        results = [
            ResolveResult(
                hostname=host,
                host=node.addr[0].decode("ascii"),
                port=node.addr[1],
                family=node.family,
                proto=0,
                flags=NUMERIC_FLAGS,
            )
            for node in answer.nodes
        ]
        if not results:
            raise OSError(None, "DNS lookup failed")
        return results

    async def close(self) -> None:
        await self._resolver.close()
