"""The outbound HTTP client: what one call sends and what the tenant reads of its answer.

One client per process. Each call's head is ours (`outbound.wire.request_head`: the
task's headers, ours from `outbound.attempt_headers`, the framing), written with its body
on a connection of the transport (`outbound.transport`: our pool, dialled through the
egress check, answers parsed by httptools). The caller hands each call its credential
and signing keys (the client loads nothing). No proxy (the check must see the real
destination), no redirects (a public endpoint could answer 302 to an internal URL), no
cookies (the client is shared by every tenant), the task's timeout over the whole call,
and a bounded read of the response body, decompressed or not, with the credential
redacted before it is kept. Error texts are tenant-facing: never an address.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from outbound.attempt_headers import USER_AGENT as USER_AGENT  # re-exported: the tests compare with it
from outbound.attempt_headers import our_headers
from outbound.calling_tenant import calling_for
from outbound.connections import AnswerError, ConnectionPool, Origin
from outbound.decoding import BoundedDecoder
from outbound.dialer import DialRefused
from outbound.egress import GENERIC_MESSAGE, EgressDenied, EgressPolicy, port_spelling_problem
from outbound.redaction import REDACTED, kept_body, window_bytes
from outbound.resolvers import Resolver
from outbound.tenant_lookups import LookupLimits
from outbound.transport import PooledTransport, Transport
from outbound.wire import parse_url, request_head

logger = logging.getLogger(__name__)

RESPONSE_BODY_LIMIT = 4096  # bytes kept for the history
# Methods sent once more when a reused connection closed before any answer (RFC 9110 9.2.2).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})

ERROR_TIMEOUT = "timeout"
ERROR_CONNECTION = "connection failed"
ERROR_REQUEST = "request failed"
ERROR_SECRET = "secret unavailable"
ERROR_SIGNING = "signing keys unavailable"
__all__ = ["REDACTED", "Call", "Delivery", "DeliveryClient"]


class Call(Protocol):
    """What the client reads of one call (the executor's claimed job has these fields)."""

    @property
    def id(self) -> object: ...
    @property
    def tenant_id(self) -> str: ...
    @property
    def scheduled_at(self) -> datetime: ...
    @property
    def attempt(self) -> int: ...
    @property
    def timeout_seconds(self) -> int: ...
    @property
    def method(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def body(self) -> str: ...


@dataclass(slots=True)  # not frozen: its __init__ would set each field through object.__setattr__ (2x, per call)
class Delivery:
    """What one attempt got: a status (any, 3xx included), or an error text."""

    http_status: int | None = None
    error: str | None = None
    response_body: str | None = None
    retry_after: str | None = None  # the response's Retry-After header, as sent


def attempt_headers(
    call: Call, *, secret: str | None, signing_keys: Sequence[bytes], sent_at: datetime | None = None
) -> dict[str, str]:
    """Our headers for this attempt (`outbound.headers.DELIVERY_HEADERS`), the credential and signature included."""
    return our_headers(
        job_id=str(call.id),
        scheduled_at=call.scheduled_at,
        attempt=call.attempt,
        sent_at=sent_at or datetime.now(UTC),
        timeout_seconds=call.timeout_seconds,
        secret=secret,
        signing_keys=signing_keys,
        body=call.body.encode() if signing_keys else b"",  # only a signature reads it
    )


def delivery_headers(
    call: Call, *, secret: str | None, signing_keys: Sequence[bytes], sent_at: datetime | None = None
) -> dict[str, str]:
    """The task's headers plus ours (`attempt_headers`); ours win on a clash of names, which the API refuses."""
    ours = attempt_headers(call, secret=secret, signing_keys=signing_keys, sent_at=sent_at)
    taken = {name.lower() for name in ours}
    return {**{name: value for name, value in call.headers.items() if name.lower() not in taken}, **ours}


# A task's URL repeats on every run: its port spelling is checked once per distinct URL (the check is pure).
_port_spelling_problem = functools.lru_cache(maxsize=4096)(port_spelling_problem)


def _origin(tenant_id: str, url: str) -> Origin:
    """The pool's key: the tenant, the scheme, the host (as DNS and TLS get it), the port."""
    parsed = parse_url(url)
    return (tenant_id, parsed.scheme, parsed.raw_host or "", parsed.port or 0)


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from (a disconnect carries the reset that caused it)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _describe(exc: BaseException) -> str:
    """A tenant-safe error text for a failed call (the network's own messages name addresses)."""
    if any(isinstance(seen, ConnectionError) for seen in _causes(exc)):
        return ERROR_CONNECTION
    if isinstance(exc, TimeoutError):
        return ERROR_TIMEOUT
    return f"{ERROR_REQUEST} ({type(exc).__name__})"


class DeliveryClient:
    """Send jobs' HTTP calls; one per process, closed with `aclose()`."""

    def __init__(
        self,
        *,
        policy: EgressPolicy,
        max_connections: int = 100,
        keepalive_seconds: float = 30.0,
        body_limit: int = RESPONSE_BODY_LIMIT,
        resolver: Resolver | None = None,  # the resolver under the vetting (tests: a scripted one)
        lookups: LookupLimits | None = None,  # how names are looked up (c-ares; settings DNS_*)
        ssl_context: ssl.SSLContext | None = None,  # TLS trust (default: the system's)
        transport: Transport | None = None,
    ) -> None:
        self._body_limit = body_limit
        self.transport = transport or PooledTransport(
            ConnectionPool(
                policy=policy,
                limit=max_connections,
                keepalive_seconds=keepalive_seconds,
                decoder_factory=BoundedDecoder,
                resolver=resolver,
                lookups=lookups,
                ssl_context=ssl_context,
            )
        )

    async def warm(self, calls: Iterable[Call], *, within: float) -> int:
        """Open, ahead of their second, the connections these calls will use; returns how many it held.

        A burst's first call was late mostly because the loop opened its cold connections at
        the second. Here each origin (tenant, scheme, host, port) gets at most one connection
        per call to it, all of them at most the pool's limit, dialled through the same check as
        a call. Nothing is sent on them. `within`: seconds until the calls are due.
        """
        origins: Counter[Origin] = Counter()
        for call in calls:
            if _port_spelling_problem(call.url) is not None:
                continue  # refused at send, never dialled
            try:
                origin = _origin(call.tenant_id, call.url)
            except ValueError:
                continue
            if origin[1] in {"http", "https"} and origin[2]:
                origins[origin] += 1
        limit = self.transport.limit or sum(origins.values())  # 0: no limit
        wanted: list[Origin] = []
        for origin, count in origins.items():
            wanted.extend([origin] * min(count, limit - len(wanted)))
        if not wanted:
            return 0
        return await self.transport.hold(wanted, within=within)

    async def send(self, call: Call, *, secret: str | None = None, signing_keys: Sequence[bytes] = ()) -> Delivery:
        """Make the call once, with its credential (`Authorization`) and signing keys; never raises for
        anything the endpoint or network does."""
        # The API refuses these since issue #13; a job written before is refused here, not dialled.
        if (problem := _port_spelling_problem(call.url)) is not None:
            logger.warning(
                "egress refused at dial time",
                extra={"event": "egress_denied", "job_id": str(call.id), "reason": problem},
            )
            return Delivery(error=GENERIC_MESSAGE)
        ours = attempt_headers(call, secret=secret, signing_keys=signing_keys)
        content = call.body.encode() if call.body else None
        window = window_bytes(secret, self._body_limit)
        try:
            with calling_for(call.tenant_id):  # the lookups' cap per tenant (calling_tenant)
                url = parse_url(call.url)
                head = request_head(call.method, url, call.headers, ours, None if content is None else len(content))
                message = head + content if content is not None else head
                origin = (call.tenant_id, url.scheme, url.raw_host or "", url.port or 0)
                async with asyncio.timeout(call.timeout_seconds):
                    answer = await self.transport.exchange(
                        origin,
                        message,
                        window=window,
                        head_only=call.method == "HEAD",
                        idempotent=call.method in IDEMPOTENT_METHODS,
                    )
        except (EgressDenied, AnswerError, OSError, TimeoutError, ValueError, zlib.error) as exc:
            refusal = next((e for e in _causes(exc) if isinstance(e, EgressDenied | DialRefused)), None)
            if refusal is None:
                return Delivery(error=_describe(exc))
            # The reason (which may name addresses) is for operators; the tenant sees the generic text.
            logger.warning(
                "egress refused at dial time",
                extra={"event": "egress_denied", "job_id": str(call.id), "reason": refusal.reason},
            )
            return Delivery(error=GENERIC_MESSAGE)
        return Delivery(
            http_status=answer.status,
            response_body=kept_body(answer.body, secret, self._body_limit),
            retry_after=answer.retry_after,
        )

    async def aclose(self) -> None:
        await self.transport.aclose()
