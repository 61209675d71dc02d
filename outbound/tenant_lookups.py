"""The executor's name lookups: c-ares on the event loop, bounded per lookup and per tenant.

getaddrinfo ran on the loop's pool of four threads and was never given up: four of one
tenant's names that never answer held every thread (and the pool slots of their dials),
and another tenant's call timed out behind them. Here each lookup is asynchronous (c-ares
through `resolvers.AresResolver`, which takes our name servers), ends after its own
timeout, a tenant has at most `per_tenant` lookups in flight (the rest fail at once), and
a name whose lookup failed is not asked again for `negative_seconds`. What a failure
means is `outbound.egress.lookups`'s rule: `NameNotFound` or `LookupUnfinished`.

Every address is still vetted: by `dialer.VettingResolver` around this, and by the socket
factory right before connect().
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import Counter
from dataclasses import dataclass

from outbound.calling_tenant import CALLING_TENANT
from outbound.egress import LookupUnfinished, NameNotFound, lookup_failure
from outbound.egress.lookups import ares_channel_options
from outbound.resolvers import AresResolver, Resolver, ResolveResult

logger = logging.getLogger(__name__)

NEGATIVE_CACHE_NAMES = 4096  # a bound on names remembered as failed; cleared past it


@dataclass(frozen=True, slots=True)
class LookupLimits:
    """How the executor looks names up (settings DNS_*; docs/reference/settings.md)."""

    nameservers: tuple[str, ...] = ()  # "address" or "address:port"; empty: the system's (/etc/resolv.conf)
    timeout_seconds: float = 2.0
    per_tenant: int = 8  # lookups in flight per tenant
    negative_seconds: float = 5.0  # a failed name is not asked again for this long


class TenantLookups:
    """Resolve for the calling tenant (`calling_tenant`), under `LookupLimits`; built inside the event loop."""

    def __init__(self, limits: LookupLimits, inner: Resolver | None = None) -> None:
        self._limits = limits
        self._inner = inner
        self._in_flight: Counter[str] = Counter()
        # (tenant or None for every tenant, host, family) -> (until, what the lookup said): a name
        # that failed fails at once, for a while.
        self._failed: dict[tuple[str | None, str, int], tuple[float, NameNotFound | LookupUnfinished]] = {}

    def _resolver(self) -> Resolver:
        if self._inner is None:
            options = ares_channel_options(self._limits.nameservers, self._limits.timeout_seconds)
            nameservers = options.pop("servers", None)
            self._inner = AresResolver(nameservers=nameservers, **options)
        return self._inner

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        tenant = CALLING_TENANT.get()
        loop = asyncio.get_running_loop()
        # A name that does not exist does not exist for anyone; a lookup that did not finish (a
        # timeout, a server error) says nothing about the name, so only its tenant fails fast on it.
        for key in ((None, host, int(family)), (tenant, host, int(family))):
            failed = self._failed.get(key)
            if failed is not None:
                if failed[0] > loop.time():
                    raise type(failed[1])(*failed[1].args)  # a fresh exception: a raised one keeps its traceback
                del self._failed[key]
        if self._in_flight[tenant] >= self._limits.per_tenant:
            # Refused, not queued: a tenant's hanging names must not hold its other calls either.
            raise LookupUnfinished("too many lookups in flight for this tenant")
        self._in_flight[tenant] += 1
        try:
            async with asyncio.timeout(self._limits.timeout_seconds):
                return await self._resolver().resolve(host, port, family)
        except (OSError, TimeoutError, UnicodeError, ValueError) as exc:
            failure = lookup_failure(exc)
            owner = None if isinstance(failure, NameNotFound) else tenant
            self._remember((owner, host, int(family)), failure, loop.time())
            logger.info(
                "name lookup failed",
                extra={
                    "event": "dns_lookup_failed",
                    "tenant_id": tenant,
                    "unfinished": isinstance(failure, LookupUnfinished),
                    "reason": str(failure),
                },
            )
            raise failure from None
        finally:
            self._in_flight[tenant] -= 1
            if not self._in_flight[tenant]:
                del self._in_flight[tenant]

    def _remember(self, key: tuple[str | None, str, int], failure: NameNotFound | LookupUnfinished, now: float) -> None:
        if self._limits.negative_seconds <= 0:
            return
        if len(self._failed) >= NEGATIVE_CACHE_NAMES:
            self._failed = {k: v for k, v in self._failed.items() if v[0] > now}
            if len(self._failed) >= NEGATIVE_CACHE_NAMES:
                self._failed.clear()
        self._failed[key] = (now + self._limits.negative_seconds, failure)

    async def close(self) -> None:
        if self._inner is not None:
            await self._inner.close()
