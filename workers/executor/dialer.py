"""The dial-time egress check, inside aiohttp's connection path, on its public hooks only.

The create-time URL check loses to DNS rebinding (a name that answered a public
address then answers a private one), so the executor checks again when the
real address is known. aiohttp connects to exactly the addresses its resolver
returns (no second lookup), and TLS still verifies the URL's host name. Two
hooks, both public `TCPConnector` arguments:

- `resolver=VettingResolver`: resolve (`lookups.TenantLookups`: c-ares, a
  timeout per lookup, a cap per tenant, around the inner resolver when one is
  given), vet EVERY answer (all or nothing: a public + private mix is what
  rebinding serves) and the name itself; a name that does not exist is refused
  the same way, a lookup that did not finish fails as a connection failure.
- `socket_factory=vetted_socket_factory`: the analogue of Go's dialer Control
  hook. aiohappyeyeballs calls it for every socket, with the exact address and
  port about to be passed to connect(): resolver answers, DNS-cache hits and IP
  literals (which skip the resolver) alike. Nothing else in aiohttp opens a
  socket, so every pooled connection was vetted and reusing one skips nothing.
  (This replaced an override of the private `TCPConnector._resolve_host`, which
  would silently stop being called if aiohttp renamed it.)

Refusals carry the generic "destination not allowed" as their text; the reason
(which may name addresses) is only for our logs.
"""

from __future__ import annotations

import socket
from typing import Any, NamedTuple, cast

from aiohappyeyeballs import AddrInfoType, SocketFactoryType
from aiohttp import ClientRequest, TCPConnector
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_reqrep import ConnectionKey

from tasks.egress import GENERIC_MESSAGE, EgressDenied, EgressPolicy, LookupUnfinished

from .calling_tenant import CALLING_TENANT
from .lookups import LookupLimits, TenantLookups


class DialRefused(OSError):
    """The socket factory refused an address; an OSError because that is what aiohttp expects there."""

    def __init__(self, reason: str) -> None:
        super().__init__(GENERIC_MESSAGE)
        self.reason = reason


class VettingResolver(AbstractResolver):
    """Resolve, then vet every address with the egress policy before anyone dials it."""

    def __init__(
        self, policy: EgressPolicy, inner: AbstractResolver | None = None, limits: LookupLimits | None = None
    ) -> None:
        self._policy = policy
        self._inner = TenantLookups(limits or LookupLimits(), inner)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            answers = await self._inner.resolve(host, port, family)
        except LookupUnfinished:
            raise  # nothing is known about the name: the call reads "connection failed", not a refusal
        except OSError as exc:
            raise EgressDenied(f"{host!r} did not resolve: {exc}") from None
        # All or nothing: a public + private mix is what a rebinding answer looks like.
        self._policy.vet_resolved(host, port, [answer["host"] for answer in answers])
        return answers

    async def close(self) -> None:
        await self._inner.close()


def vetted_socket_factory(policy: EgressPolicy) -> SocketFactoryType:
    """A socket factory that refuses to open a socket for an address the policy refuses."""

    def open_socket(addr_info: AddrInfoType) -> socket.socket:
        family, type_, proto, _, address = addr_info
        try:
            # Right before connect(): this (address, port) is exactly what the socket will dial.
            policy.check_destination(address[0], address[1])
        except EgressDenied as exc:
            raise DialRefused(exc.reason) from None
        return socket.socket(family=family, type=type_, proto=proto)

    return open_socket


def vetted_connector(*, policy: EgressPolicy, resolver: VettingResolver, **kwargs: Any) -> TCPConnector:
    """A TCP connector whose every connection goes to an address the policy admits.

    The caller closes `resolver` after the connector: aiohttp closes only a resolver it built.
    """
    return TCPConnector(resolver=resolver, socket_factory=vetted_socket_factory(policy), **kwargs)


class TenantConnectionKey(NamedTuple):
    """aiohttp's `ConnectionKey` and the tenant: what the connector's pool keeps a connection under.

    The connector reads a key's fields by name (`is_ssl`, and `host`/`port` in its errors)
    and otherwise only hashes it, so the same fields plus one keep it working as before.
    """

    host: str
    port: int | None
    is_ssl: bool
    ssl: Any
    proxy: Any
    proxy_auth: Any
    proxy_headers_hash: int | None
    server_hostname: str | None
    tenant: str


class TenantRequest(ClientRequest):
    """aiohttp's request whose pool key carries the calling tenant (`calling_tenant`).

    Keyed by origin alone, tenant B's call rode on the connection tenant A opened: against a
    server that authenticates the connection, B was answered as A. The session builds every
    request with this class; `tenant` is read when the request is built, inside the call.
    """

    def __init__(self, *args: Any, tenant: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tenant = CALLING_TENANT.get() if tenant is None else tenant

    @property
    def connection_key(self) -> ConnectionKey:
        # A wider tuple in ConnectionKey's place: the connector only hashes it and reads fields by name.
        return cast(ConnectionKey, TenantConnectionKey(*super().connection_key, self.tenant))
