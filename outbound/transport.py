"""The port a call's bytes go through: write a request on a vetted connection, read the answer.

`Transport` is the contract (a small base class, as Django documents a backend's);
`PooledTransport` is the one we run: our own kept-alive pool (`outbound.connections`),
answers parsed by httptools, every connection dialled through the egress check.
The client (`outbound.client`) builds the bytes and reads the answer's meaning; the
transport only moves them, so a test can hand the client another transport.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from outbound.calling_tenant import calling_for
from outbound.connections import Answer, Connection, ConnectionPool, Origin, ServerDisconnected
from outbound.egress import EgressDenied


class Transport:
    """Port: one request's exchange on an origin's connection, and connections held open ahead."""

    limit = 0  # connections open at once at most (0: no bound); `hold` is asked for no more

    async def exchange(
        self, origin: Origin, message: bytes, *, window: int, head_only: bool, idempotent: bool
    ) -> Answer:
        """Write `message` (head and body) and read the answer, up to `window` body bytes.

        `idempotent`: the request may be sent once more when a reused connection closed before
        any byte of the answer (RFC 9112 9.3.1). Raises for what the network or endpoint did.
        """
        raise NotImplementedError

    async def hold(self, origins: Sequence[Origin], *, within: float) -> int:
        """Open a connection per entry of `origins` (idle ones first) and give them back idle by `within`
        seconds from now; returns how many were held. A refused or failed dial is left for the call."""
        return 0

    async def aclose(self) -> None:
        """Close every connection (none is in use at shutdown)."""


class PooledTransport(Transport):
    """Our pool's connections, read by httptools; the pool dials through the egress check."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.limit = pool.limit

    async def exchange(
        self, origin: Origin, message: bytes, *, window: int, head_only: bool, idempotent: bool
    ) -> Answer:
        pool = self.pool
        retry = idempotent
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
            return answer

    async def hold(self, origins: Sequence[Origin], *, within: float) -> int:
        """Held together until all are open (so none is reused twice) or `within` runs out.

        A dial still under way then is given up: it holds a slot of the pool, and the calls (to
        this origin or another, one unreachable) must not queue behind it. Each connection is its
        origin's tenant's, as a call's is.
        """
        pool = self.pool
        held: list[Connection] = []
        opened = 0
        due = False

        async def take(origin: Origin) -> None:
            nonlocal opened
            with calling_for(origin[0]), contextlib.suppress(EgressDenied, OSError, TimeoutError, ValueError):
                connection, _ = await pool.acquire(origin)
                opened += 1
                if due:
                    pool.release(connection, reusable=True)  # the second came: straight back to the pool
                else:
                    held.append(connection)

        tasks = [asyncio.ensure_future(take(origin)) for origin in origins]
        try:
            if tasks:
                await asyncio.wait(tasks, timeout=max(within, 0.0))
        finally:
            due = True
            while held:
                pool.release(held.pop(), reusable=True)  # back to the pool, idle (keep-alive), for the calls
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return opened

    async def aclose(self) -> None:
        await self.pool.aclose()
