"""Kept-alive connections belong to one tenant: another tenant's call to the same origin never rides on one.

Against a receiver that authenticates the connection, not the request (the first request on a
connection says who it is; every answer on that connection is for that identity), as NTLM,
Negotiate and some mTLS-terminating proxies do. One shared pool keyed by origin alone answered
tenant B as tenant A, and B's stored response held A's data.
"""

from __future__ import annotations

import asyncio

from outbound.client import DeliveryClient
from tests.receivers import ScriptedServer
from tests.workers.executor_helpers import claimed, policy_for


async def _read_head(reader: asyncio.StreamReader) -> dict[bytes, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    length = int(fields.get(b"content-length", b"0"))
    if length:
        await reader.readexactly(length)
    return fields


async def _authenticate_per_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
    """The first request's X-Login is who the whole connection is; every answer says so (and keeps it alive)."""
    who = None
    while True:
        try:
            fields = await _read_head(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        if who is None:
            who = fields.get(b"x-login", b"anonymous")
        body = b"private data of " + who
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()


def test_a_tenants_call_never_rides_on_a_connection_another_tenant_opened():
    with ScriptedServer(_authenticate_per_connection) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
            try:
                alice = claimed(server.url("/"), tenant_id="tenant-a", headers={"X-Login": "alice"})
                bob = claimed(server.url("/"), tenant_id="tenant-b", headers={"X-Login": "bob"})
                again = claimed(server.url("/"), tenant_id="tenant-a", headers={"X-Login": "alice"})
                return [await client.send(job) for job in (alice, bob, again)]
            finally:
                await client.aclose()

        deliveries = asyncio.run(main())
        connections = server.connections
    assert [d.http_status for d in deliveries] == [200, 200, 200]
    assert [d.response_body for d in deliveries] == [
        "private data of alice",
        "private data of bob",  # was "private data of alice": B rode on A's connection
        "private data of alice",
    ]
    assert connections == 2  # one per tenant: tenant A's second call still reuses its own
