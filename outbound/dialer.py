"""The dial-time egress check, on the two hooks every connection of the pool passes.

The create-time URL check loses to DNS rebinding (a name that answered a public
address then answers a private one), so the client checks again when the
real address is known. The pool (`outbound.connections`) connects to exactly the
addresses this resolver returns (no second lookup), and TLS still verifies the
URL's host name. Two hooks:

- `VettingResolver`: resolve (`lookups.TenantLookups`: c-ares, a
  timeout per lookup, a cap per tenant, around the inner resolver when one is
  given), vet EVERY answer (all or nothing: a public + private mix is what
  rebinding serves) and the name itself; a name that does not exist is refused
  the same way, a lookup that did not finish fails as a connection failure.
- `vetted_socket_factory`: the analogue of Go's dialer Control hook.
  aiohappyeyeballs calls it for every socket, with the exact address and port
  about to be passed to connect(): resolver answers, cache hits and IP literals
  (which skip the resolver) alike. Nothing else in the pool opens a socket, so
  every pooled connection was vetted and reusing one skips nothing.

Refusals carry the generic "destination not allowed" as their text; the reason
(which may name addresses) is only for our logs.
"""

from __future__ import annotations

import socket

from aiohappyeyeballs import AddrInfoType, SocketFactoryType

from outbound.egress import GENERIC_MESSAGE, EgressDenied, EgressPolicy, LookupUnfinished
from outbound.resolvers import Resolver, ResolveResult
from outbound.tenant_lookups import LookupLimits, TenantLookups


class DialRefused(OSError):
    """The socket factory refused an address; an OSError because that is what aiohappyeyeballs expects there."""

    def __init__(self, reason: str) -> None:
        super().__init__(GENERIC_MESSAGE)
        self.reason = reason


class VettingResolver:
    """Resolve, then vet every address with the egress policy before anyone dials it."""

    def __init__(self, policy: EgressPolicy, inner: Resolver | None = None, limits: LookupLimits | None = None) -> None:
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
