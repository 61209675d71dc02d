"""The outbound HTTP client: three engines, all dialling through the egress check.

One client per process. The default, `httptools`, writes our request head
(`wire.request_head`) on a connection of our own pool and parses the answer
with httptools (`workers.executor.connections`): aiohttp's pool and reader
around the same head cost about half as much again per call. `aiohttp` writes
the same head on a connection of aiohttp's pool and reads with aiohttp's
parser; `httpx` is httpx's API on the httpx-aiohttp transport (httpx's own async
transport measured ~20x slower than aiohttp here). The aiohttp and httpx
engines share one aiohttp session we build: a `vetted_connector` (dial-time
SSRF check) with connection limits and keep-alive; the httptools pool dials
with the same resolver and socket factory.
`trust_env=False` on both layers (a proxy would hide the real
destination from the check), no redirects (a public endpoint could answer 302
to an internal URL), the task's timeout over the whole call, and a bounded
read of the response body, decompressed or not. No cookie jar on either layer:
the client is shared by every tenant, so a cookie one tenant's endpoint set
would otherwise ride along with another tenant's call to the same host (the
aiohttp engine reads no Set-Cookie at all). Error texts are tenant-facing: never an address.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.cookiejar
import logging
import ssl
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import httpx
from aiohttp.abc import AbstractResolver
from aiohttp.client import IDEMPOTENT_METHODS
from aiohttp.client_reqrep import RequestInfo
from aiohttp.http_exceptions import HttpProcessingError
from httpx_aiohttp import AiohttpTransport
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from jobs.delivery import USER_AGENT as USER_AGENT  # re-exported: the tests compare with it
from jobs.delivery import our_headers
from jobs.queue import ClaimedJob
from tasks.egress import GENERIC_MESSAGE, EgressDenied, EgressPolicy, port_spelling_problem
from tasks.headers import SECRET_HEADER

from .calling_tenant import calling_for
from .connections import AnswerError, ConnectionPool, Origin, ServerDisconnected
from .dialer import DialRefused, TenantRequest, VettingResolver, vetted_connector
from .lookups import LookupLimits
from .redaction import REDACTED, kept_body, window_bytes
from .secrets import SecretsProvider, SecretUnavailable
from .signing import SigningKeys, SigningUnavailable
from .wire import parse_url, request_head

logger = logging.getLogger(__name__)

RESPONSE_BODY_LIMIT = 4096  # bytes kept for the history

ERROR_TIMEOUT = "timeout"
ERROR_CONNECTION = "connection failed"
ERROR_REQUEST = "request failed"
ERROR_SECRET = "secret unavailable"
ERROR_SIGNING = "signing keys unavailable"
ENGINES = ("httpx", "aiohttp", "httptools")
POOL_REQUESTS_MAX = 4096  # distinct origins whose pool key is kept (DeliveryClient._pool_request)
# What a malformed answer's ClientResponseError names as its request: nothing (the text names no address).
_NO_REQUEST_INFO = RequestInfo(URL(), "", CIMultiDictProxy(CIMultiDict()), URL())
__all__ = ["REDACTED", "Delivery", "DeliveryClient"]


@dataclass(slots=True)  # not frozen: its __init__ would set each field through object.__setattr__ (2x, per call)
class Delivery:
    """What one attempt got: a status (any, 3xx included), or an error text."""

    http_status: int | None = None
    error: str | None = None
    response_body: str | None = None
    retry_after: str | None = None  # the response's Retry-After header, as sent


def attempt_headers(
    job: ClaimedJob,
    secrets: SecretsProvider | None,
    signing: SigningKeys | None = None,
    *,
    sent_at: datetime | None = None,
) -> dict[str, str]:
    """Our headers for this attempt (`tasks.headers.DELIVERY_HEADERS`), the secret and signature included."""
    secret = None
    if job.secret_ref:
        if secrets is None:
            raise SecretUnavailable("no secrets provider")
        # The job's own tenant's secret of that name, never another tenant's: tokens never sit in the jobs table.
        secret = secrets.get(job.tenant_id, job.secret_ref)
    # Loaded with the claimed batch (SigningKeys.refresh): no query here.
    keys = signing.keys_for(job.tenant_id) if signing is not None else ()
    return our_headers(
        job_id=str(job.id),
        scheduled_at=job.scheduled_at,
        attempt=job.attempt,
        sent_at=sent_at or datetime.now(UTC),
        timeout_seconds=job.timeout_seconds,
        secret=secret,
        signing_keys=keys,
        body=job.body.encode() if keys else b"",  # only a signature reads it
    )


def delivery_headers(
    job: ClaimedJob,
    secrets: SecretsProvider | None,
    signing: SigningKeys | None = None,
    *,
    sent_at: datetime | None = None,
) -> CIMultiDict[str]:
    """The task's headers plus ours (`attempt_headers`); ours win on a clash, which the API refuses."""
    headers: CIMultiDict[str] = CIMultiDict(job.headers)
    headers.update(attempt_headers(job, secrets, signing, sent_at=sent_at))
    return headers


# A task's URL repeats on every run: its port spelling is checked once per distinct URL (the check
# is pure; 2.9 % of the HTTP path's samples in bench.delivery when run per call).
_port_spelling_problem = functools.lru_cache(maxsize=4096)(port_spelling_problem)


@functools.lru_cache(maxsize=1024)
def _timeout(seconds: int) -> aiohttp.ClientTimeout:
    """One immutable ClientTimeout per distinct task timeout, not one per call."""
    return aiohttp.ClientTimeout(total=seconds)


def _pool_origin(tenant_id: str, url: URL) -> Origin:
    """The httptools pool's key: the tenant, the scheme, the host (as DNS and TLS get it), the port."""
    return (tenant_id, url.scheme, url.raw_host or "", url.port or 0)


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from (httpx-aiohttp and aiohttp wrap the real cause)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _describe(exc: BaseException) -> str:
    """A tenant-safe error text for a failed call (aiohttp's messages name addresses)."""
    # httpx-aiohttp maps every aiohttp connection error to ConnectTimeout: look at the cause.
    connect_errors = aiohttp.ClientConnectorError | ConnectionError | httpx.ConnectError
    if any(isinstance(seen, connect_errors) for seen in _causes(exc)):
        return ERROR_CONNECTION
    if isinstance(exc, TimeoutError | httpx.TimeoutException | aiohttp.ServerTimeoutError):
        return ERROR_TIMEOUT
    return f"{ERROR_REQUEST} ({type(exc).__name__})"


class _NoCookies(http.cookiejar.CookiePolicy):
    """A cookie policy that stores and returns nothing (httpx has no switch to turn its jar off)."""

    netscape = True
    rfc2965 = False
    hide_cookie2 = True

    def set_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: object) -> bool:
        return False

    def domain_return_ok(self, domain: str, request: object) -> bool:
        return False

    def path_return_ok(self, path: str, request: object) -> bool:
        return False


class _BoundedDecoder:
    """Decode a Content-Encoding, producing at most the bytes asked for (a 17 MiB gzip bomb costs `room`).

    httpx's own decoders inflate each chunk whole. gzip and deflate (what both
    clients ask for, without brotli or zstd installed) are decoded here with
    zlib's max_length; any other coding is kept as received, still bounded.
    """

    def __init__(self, content_encoding: str) -> None:
        coding = content_encoding.strip().lower()
        self._zlib: zlib._Decompress | None = None
        if coding in {"gzip", "x-gzip"}:
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._zlib = zlib.decompressobj()
        self._raw_deflate_tried = False

    def decode(self, data: bytes, room: int) -> bytes:
        if self._zlib is None:
            return data[:room]
        try:
            # Input beyond `room` output stays in unconsumed_tail and is dropped: we stop reading here.
            return self._zlib.decompress(data, room)
        except zlib.error:
            if self._raw_deflate_tried:
                raise
            # Some servers send raw deflate without the zlib header, as httpx also tolerates.
            self._raw_deflate_tried = True
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._zlib.decompress(data, room)


class DeliveryClient:
    """Send jobs' HTTP calls; one per process, closed with `aclose()`.

    `engine="httptools"` (the default) writes each request on a connection of our own
    pool and parses the answer with httptools (`_send_httptools`); `engine="aiohttp"`
    writes it on a connection of the aiohttp session's pool and reads the answer with
    aiohttp's parser (`_send_aiohttp`); `engine="httpx"` sends through httpx's API on the
    httpx-aiohttp transport. All dial through the same vetting resolver and socket factory
    and behave the same (the tests run each on all), but they differ in CPU:
    `python -m bench.delivery --only httptools+asyncio,aiohttp+asyncio` (the HTTP path alone,
    quiet machine) 0.17 ms per call for httptools, 0.26 ms for aiohttp; httpx ~0.9 ms.
    """

    def __init__(
        self,
        *,
        policy: EgressPolicy,
        secrets: SecretsProvider | None = None,
        signing: SigningKeys | None = None,
        max_connections: int = 100,
        keepalive_seconds: float = 30.0,
        body_limit: int = RESPONSE_BODY_LIMIT,
        resolver: AbstractResolver | None = None,
        lookups: LookupLimits | None = None,  # how names are looked up (c-ares; settings DNS_*)
        engine: str = "httptools",
        ssl_context: ssl.SSLContext | None = None,  # the httptools engine's TLS trust (default: the system's)
    ) -> None:
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}")
        self.engine = engine
        self._policy = policy
        self._secrets = secrets
        self.signing = signing
        self._body_limit = body_limit
        self._session: aiohttp.ClientSession | None = None
        self._session_resolver: VettingResolver | None = None
        self._pool_requests: dict[tuple[str, URL], aiohttp.ClientRequest] = {}
        # The httptools engine's own pool (workers.executor.connections), on the same vetted dial.
        self._pool = ConnectionPool(
            policy=policy,
            limit=max_connections,
            keepalive_seconds=keepalive_seconds,
            decoder_factory=_BoundedDecoder,
            resolver=resolver,
            lookups=lookups,
            ssl_context=ssl_context,
        )

        def open_session() -> aiohttp.ClientSession:
            # Built lazily, inside the running event loop; once: both engines (and warm) share it.
            if self._session is not None:
                return self._session
            self._session_resolver = VettingResolver(policy, resolver, lookups)
            self._session = aiohttp.ClientSession(
                connector=vetted_connector(
                    policy=policy,
                    resolver=self._session_resolver,
                    limit=max_connections,
                    keepalive_timeout=keepalive_seconds,
                ),
                trust_env=False,  # no proxy from the environment: the check must see the real destination
                cookie_jar=aiohttp.DummyCookieJar(),  # shared by all tenants: a cookie must never cross to another
                request_class=TenantRequest,  # nor a kept-alive connection: the pool's key holds the tenant
            )
            return self._session

        self._open_session: Callable[[], aiohttp.ClientSession] = open_session
        self._client = httpx.AsyncClient(
            transport=AiohttpTransport(client=open_session),
            trust_env=False,
            follow_redirects=False,
            timeout=None,  # the task's timeout is applied to the whole call below
            cookies=http.cookiejar.CookieJar(policy=_NoCookies()),  # a jar, not httpx.Cookies: that one is copied
        )

    def prepare(self, jobs: list[ClaimedJob]) -> None:
        """Load the claimed batch's signing keys, on the calling (claim) thread; never raises."""
        if self.signing is not None and jobs:
            self.signing.refresh(job.tenant_id for job in jobs)

    def prefetch_secrets(self, jobs: Iterable[ClaimedJob]) -> None:
        """Load the secrets a claimed batch names, in one go; blocking, so call it off the event loop."""
        if self._secrets is not None:
            self._secrets.prefetch((job.tenant_id, job.secret_ref) for job in jobs if job.secret_ref)

    async def warm(self, jobs: Iterable[ClaimedJob], *, within: float) -> int:
        """Open, ahead of their second, the connections these claimed jobs will use; returns how many it held.

        A burst's first call was late mostly because the loop opened its cold connections at
        the second. Here each origin (scheme, host, port) gets at most one connection per job
        that calls it, and all of them at most the pool's limit; they are taken from the pool
        together (idle ones first: only the shortfall is dialled) and put back at once, idle,
        for the calls. Every new one is dialled by the same vetted connector as a call, so the
        egress check still refuses what it would refuse then; a refused or failed dial is left
        for the call to report. `within`: seconds until the jobs are due (the dialling's bound).
        Nothing is sent on these connections. A connection is the job's tenant's, as a call's is.
        """
        origins: Counter[tuple[str, URL]] = Counter()
        for job in jobs:
            if _port_spelling_problem(job.url) is not None:
                continue  # refused at send, never dialled
            try:
                url = URL(job.url)
            except ValueError:
                continue
            if url.scheme in {"http", "https"} and url.raw_host:
                origins[job.tenant_id, url.origin()] += 1
        if not origins:
            return 0
        take, give, room = self._warm_pool()
        room = room or sum(origins.values())  # limit 0: no limit
        wanted: list[tuple[str, URL]] = []
        for origin, count in origins.items():
            share = min(count, room - len(wanted))
            wanted.extend([origin] * share)
        held: list[Any] = []
        opened = 0
        due = False

        async def hold(tenant_id: str, origin: URL) -> None:
            nonlocal opened
            with (
                calling_for(tenant_id),
                contextlib.suppress(EgressDenied, aiohttp.ClientError, OSError, TimeoutError, ValueError),
            ):
                connection = await take(tenant_id, origin, within)
                opened += 1
                if due:
                    give(connection)  # the second came: straight back to the pool
                else:
                    held.append(connection)

        def release_held() -> None:
            nonlocal due
            due = True
            while held:
                give(held.pop())  # back to the pool, idle (keep-alive), for the calls

        tasks = [asyncio.ensure_future(hold(tenant_id, origin)) for tenant_id, origin in wanted]
        try:
            # Held together until all are open (so none is reused twice) or the jobs are due.
            await asyncio.wait(tasks, timeout=max(within, 0.0))
        finally:
            release_held()
            # A dial still under way at the second is given up: it holds a slot of the pool, and the
            # calls (to this origin or another, one unreachable) must not queue behind it.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return opened

    def _warm_pool(
        self,
    ) -> tuple[Callable[[str, URL, float], Awaitable[Any]], Callable[[Any], None], int]:
        """How `warm` takes a connection from the engine's pool and gives it back idle; the pool's limit."""
        if self.engine == "httptools":
            pool = self._pool

            async def take_ours(tenant_id: str, origin: URL, within: float) -> Any:
                connection, _ = await pool.acquire(_pool_origin(tenant_id, origin))
                return connection

            return take_ours, functools.partial(pool.release, reusable=True), pool.limit
        session = self._session or self._open_session()
        connector = session.connector
        assert connector is not None

        async def take_aiohttp(tenant_id: str, origin: URL, within: float) -> Any:
            # The key a call's connection is taken by (DeliveryClient._pool_request): the pool matches them.
            timeout = aiohttp.ClientTimeout(total=None, connect=max(within, 0.0) + 0.1)  # given up at the second
            return await connector.connect(self._pool_request(session, tenant_id, origin), [], timeout)

        return take_aiohttp, lambda connection: connection.release(), connector.limit

    async def send(self, job: ClaimedJob) -> Delivery:
        """Make the job's call once; never raises for anything the endpoint or network does."""
        try:
            ours = attempt_headers(job, self._secrets, self.signing)
        except SigningUnavailable:
            logger.warning("signing keys unavailable", extra={"event": "signing_unavailable", "job_id": str(job.id)})
            return Delivery(error=ERROR_SIGNING)
        except SecretUnavailable as exc:
            # The reason names the ref, never the value: secrets are never logged.
            logger.warning(
                "secret unavailable",
                extra={
                    "event": "secret_unavailable",
                    "job_id": str(job.id),
                    "secret_ref": job.secret_ref,
                    "reason": str(exc),
                },
            )
            return Delivery(error=ERROR_SECRET)
        # The API refuses these since issue #13; a job written before is refused here, not dialled.
        if (problem := _port_spelling_problem(job.url)) is not None:
            logger.warning(
                "egress refused at dial time",
                extra={"event": "egress_denied", "job_id": str(job.id), "reason": problem},
            )
            return Delivery(error=GENERIC_MESSAGE)
        content = job.body.encode() if job.body else None
        secret = ours.get(SECRET_HEADER) if job.secret_ref else None
        try:
            with calling_for(job.tenant_id):  # the pool's key and the lookups' cap (calling_tenant)
                if self.engine == "httptools":
                    delivery = await self._send_httptools(job, ours, content, secret)
                elif self.engine == "aiohttp":
                    delivery = await self._send_aiohttp(job, ours, content, secret)
                else:
                    headers: CIMultiDict[str] = CIMultiDict(job.headers)
                    headers.update(ours)
                    async with asyncio.timeout(job.timeout_seconds):
                        delivery = await self._send_httpx(job, headers, content, secret)
        except (
            EgressDenied,
            AnswerError,
            httpx.HTTPError,
            aiohttp.ClientError,
            OSError,
            TimeoutError,
            ValueError,
            zlib.error,
        ) as exc:
            refusal = next((e for e in _causes(exc) if isinstance(e, EgressDenied | DialRefused)), None)
            if refusal is None:
                return Delivery(error=_describe(exc))
            # The reason (which may name addresses) is for operators; the tenant sees the generic text.
            logger.warning(
                "egress refused at dial time",
                extra={"event": "egress_denied", "job_id": str(job.id), "reason": refusal.reason},
            )
            return Delivery(error=GENERIC_MESSAGE)
        return delivery

    async def _send_httpx(
        self, job: ClaimedJob, headers: CIMultiDict[str], content: bytes | None, secret: str | None
    ) -> Delivery:
        window = window_bytes(secret, self._body_limit)
        async with self._client.stream(job.method, job.url, headers=list(headers.items()), content=content) as response:
            # Raw bytes, decoded here with a bound: httpx's decoders would inflate each chunk whole.
            decoder = _BoundedDecoder(response.headers.get("Content-Encoding", ""))
            chunks: list[bytes] = []
            size = 0
            async for raw in response.aiter_raw():
                chunk = decoder.decode(raw, window - size)
                chunks.append(chunk)
                size += len(chunk)
                if size >= window:
                    break  # the rest is never read: a huge answer costs us `window` bytes
            body = kept_body(b"".join(chunks), secret, self._body_limit)
            return Delivery(
                http_status=response.status_code, response_body=body, retry_after=response.headers.get("Retry-After")
            )

    def _pool_request(self, session: aiohttp.ClientSession, tenant_id: str, origin: URL) -> aiohttp.ClientRequest:
        """The request aiohttp's pool keys a connection by (tenant, scheme, host, port, default TLS, no proxy),
        one per tenant and origin: `connector.connect` only reads it, so the calls and `warm` share one."""
        key = (tenant_id, origin)
        request = self._pool_requests.get(key)
        if request is None:
            if len(self._pool_requests) >= POOL_REQUESTS_MAX:
                self._pool_requests.clear()  # a bound on distinct origins; rebuilt as they recur
            request = TenantRequest("GET", origin, loop=asyncio.get_running_loop(), session=session, tenant=tenant_id)
            self._pool_requests[key] = request
        return request

    async def _send_aiohttp(
        self, job: ClaimedJob, ours: dict[str, str], content: bytes | None, secret: str | None
    ) -> Delivery:
        """The call on a connection of aiohttp's pool: our head and body in one write, aiohttp's parser reads.

        `ClientSession.request` around the same connection and parser cost about as much again
        (`workers.executor.wire`). What it did that matters here is kept: the vetted connector dials
        (or a pooled connection is reused), the task's timeout covers the whole call, an idempotent
        method is sent once more when a reused connection turns out closed (RFC 9112 9.3.1, as aiohttp
        does), 1xx answers are skipped, the body is decompressed as read and bounded, and a connection
        goes back to the pool only after a whole answer that lets it stay open.
        """
        session = self._session or self._open_session()
        connector = session.connector
        assert connector is not None
        url = parse_url(job.url)
        head = request_head(job.method, url, job.headers, ours, None if content is None else len(content))
        message = head + content if content is not None else head
        pool_request = self._pool_request(session, job.tenant_id, url.origin())
        window = window_bytes(secret, self._body_limit)
        retry = job.method in IDEMPOTENT_METHODS
        async with asyncio.timeout(job.timeout_seconds):
            while True:
                connection = await connector.connect(pool_request, [], _timeout(job.timeout_seconds))
                if connection.protocol is None or connection.protocol.should_close:
                    # An idle kept-alive connection the server wrote to since (an answer nobody asked
                    # for, queued by aiohttp's parser), or closed: never read it for this job, which
                    # may be another tenant's. Closed and not counted as the retry: a fresh dial
                    # (or the next idle one) follows, within the task's timeout.
                    connection.close()
                    continue
                try:
                    answer = await self._exchange(connection, job.method, message, window)
                except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
                    connection.close()
                    if not retry:
                        raise
                    retry = False
                    continue
                except BaseException:
                    connection.close()  # half a request or answer on it: never back to the pool
                    raise
                connection.release()  # back to the pool, or closed when the answer asked for it
                status, retry_after, body = answer
                return Delivery(
                    http_status=status, response_body=kept_body(body, secret, self._body_limit), retry_after=retry_after
                )

    @staticmethod
    async def _exchange(
        connection: aiohttp.connector.Connection, method: str, message: bytes, window: int
    ) -> tuple[int, str | None, bytes]:
        """Write the request, read the answer's status, Retry-After and up to `window` bytes of its body."""
        protocol = connection.protocol
        transport = connection.transport
        assert protocol is not None and transport is not None
        # read_until_eof as aiohttp's session reads an answer without a length; decompressed as it is read.
        protocol.set_response_params(skip_payload=method == "HEAD", read_until_eof=True, auto_decompress=True)
        transport.write(message)
        while True:
            try:
                answer, payload = await protocol.read()
            except HttpProcessingError as exc:
                raise aiohttp.ClientResponseError(_NO_REQUEST_INFO, (), status=exc.code, message=exc.message) from exc
            if not 100 <= answer.code <= 199 or answer.code == 101:
                break  # 1xx (but 101) is interim: the answer follows on the same connection
        chunks: list[bytes] = []
        size = 0
        while size < window:
            chunk = await payload.read(window - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if payload.at_eof():
                break  # the whole (short) body is read: no second read just to see the end
        # A body cut at the window is left unread: the connection then closes on release (aiohttp's should_close).
        return answer.code, answer.headers.get("Retry-After"), b"".join(chunks)

    async def _send_httptools(
        self, job: ClaimedJob, ours: dict[str, str], content: bytes | None, secret: str | None
    ) -> Delivery:
        """The call on a connection of our own pool (`workers.executor.connections`), read by httptools.

        The same rules as `_send_aiohttp`: the vetted dial, the task's timeout over the whole call,
        an idempotent method sent once more when a reused connection closed before any answer, 1xx
        skipped, the body decompressed as read and bounded, the connection pooled only after a whole
        answer that keeps it alive.
        """
        url = parse_url(job.url)
        head = request_head(job.method, url, job.headers, ours, None if content is None else len(content))
        message = head + content if content is not None else head
        origin = _pool_origin(job.tenant_id, url)
        window = window_bytes(secret, self._body_limit)
        head_only = job.method == "HEAD"
        retry = job.method in IDEMPOTENT_METHODS
        pool = self._pool
        async with asyncio.timeout(job.timeout_seconds):
            while True:
                connection, reused = await pool.acquire(origin)
                try:
                    answer = await connection.exchange(message, window=window, head_only=head_only)
                except ServerDisconnected as exc:
                    pool.release(connection, reusable=False)
                    if not (retry and reused and not exc.answered):
                        raise
                    retry = False  # closed under us before a byte of the answer: once more (RFC 9112 9.3.1)
                    continue
                except BaseException:
                    pool.release(connection, reusable=False)  # half a request or answer on it
                    raise
                pool.release(connection, reusable=answer.reusable)
                return Delivery(
                    http_status=answer.status,
                    response_body=kept_body(answer.body, secret, self._body_limit),
                    retry_after=answer.retry_after,
                )

    async def aclose(self) -> None:
        await self._pool.aclose()
        await self._client.aclose()  # closes the session through the transport
        if self._session is not None and not self._session.closed:
            await self._session.close()
        if self._session_resolver is not None:
            await self._session_resolver.close()  # c-ares' lookups end here, not after the loop closed
            self._session_resolver = None
