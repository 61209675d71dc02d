"""The dial-time egress check, inside aiohttp's connection path.

The create-time URL check loses to DNS rebinding (a name that answered a public
address then answers a private one), so the executor checks again when the
real address is known: after resolution, right before connect(). aiohttp
connects to exactly the addresses its resolver returns (no second lookup), and
TLS still verifies the URL's host name, so the check is:

- `VettingResolver`: resolve with the inner resolver, vet EVERY answer with the
  egress policy (all or nothing), return only vetted answers.
- `VettedConnector`: aiohttp skips the resolver for IP-literal hosts (and serves
  repeat lookups from its DNS cache), so its `_resolve_host` — the one path
  every new connection's addresses come through — vets what it returns too.
  All connections in its pool were opened through that path, so reusing one
  never skips the check.

Refusals raise `EgressDenied` (str() is the generic "destination not allowed");
a name that does not resolve is refused the same way, so the tenant cannot
tell the two apart.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from aiohttp import TCPConnector
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from tasks.egress import EgressDenied, EgressPolicy


class VettingResolver(AbstractResolver):
    """Resolve, then vet every address with the egress policy before anyone dials it."""

    def __init__(self, policy: EgressPolicy, inner: AbstractResolver | None = None) -> None:
        self._policy = policy
        self._inner = inner or DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            answers = await self._inner.resolve(host, port, family)
        except OSError as exc:
            raise EgressDenied(f"{host!r} did not resolve: {exc}") from None
        # All or nothing: a public + private mix is what a rebinding answer looks like.
        self._policy.vet_resolved(host, port, [answer["host"] for answer in answers])
        return answers

    async def close(self) -> None:
        await self._inner.close()


class VettedConnector(TCPConnector):
    """A TCP connector whose every new connection goes to a vetted address."""

    def __init__(self, *, policy: EgressPolicy, resolver: AbstractResolver | None = None, **kwargs: Any) -> None:
        super().__init__(resolver=VettingResolver(policy, resolver), **kwargs)
        self._egress_policy = policy

    async def _resolve_host(self, host: str, port: int, traces: Sequence[Any] | None = None) -> list[ResolveResult]:
        answers = await super()._resolve_host(host, port, traces=traces)  # type: ignore[arg-type]
        # aiohttp returns IP literals without asking the resolver: vet them (and cached answers) here.
        self._egress_policy.vet_resolved(host, port, [answer["host"] for answer in answers])
        return answers
