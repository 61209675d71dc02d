"""The httptools engine's own pool (outbound.connections), against real servers on 127.0.0.1.

What the engine-wide tests (test_executor_http, test_executor_wire, test_dialer) cannot show:
how many connections the pool opens and keeps, its limit under concurrent calls, a call that
times out while waiting for room, HEAD answers, and TLS verified against the URL's host.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import struct
import threading

import pytest
from aiohttp.abc import AbstractResolver
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from outbound.client import ERROR_CONNECTION, ERROR_TIMEOUT, DeliveryClient
from outbound.connections import ConnectionPool
from outbound.decoding import BoundedDecoder
from tests.receivers import ScriptedServer
from tests.workers.executor_helpers import claimed, policy_for

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    return head + await reader.readexactly(length)


def _serve_forever(answer=OK, delay: float = 0.0, opened: list[int] | None = None):
    """A handler answering every request on the connection, after `delay`; `opened` tracks connections open now."""
    lock = threading.Lock()

    async def handler(reader, writer, _):
        if opened is not None:
            with lock:
                opened[0] += 1
                opened[1] = max(opened[1], opened[0])
        try:
            while True:
                try:
                    request = await _read_request(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if delay:
                    await asyncio.sleep(delay)
                writer.write(answer(request) if callable(answer) else answer)
                await writer.drain()
        finally:
            if opened is not None:
                with lock:
                    opened[0] -= 1

    return handler


def _run(main):
    return asyncio.run(main())


def _send_one(server: ScriptedServer, **job):
    """One call to `server`'s `/` on a fresh client of the httptools engine."""

    async def main():
        client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
        try:
            return await client.send(claimed(server.url("/"), **job))
        finally:
            await client.aclose()

    return _run(main)


def test_one_kept_alive_connection_carries_calls_made_one_after_the_other():
    with ScriptedServer(_serve_forever()) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
            try:
                return [await client.send(claimed(server.url(f"/{n}"))) for n in range(5)]
            finally:
                await client.aclose()

        deliveries = _run(main)
        assert server.connections == 1
    assert [d.http_status for d in deliveries] == [200] * 5
    assert {d.response_body for d in deliveries} == {"ok"}


def test_concurrent_calls_never_hold_more_connections_than_the_limit():
    opened = [0, 0]  # now, most at once
    with ScriptedServer(_serve_forever(delay=0.05, opened=opened)) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"), max_connections=2)
            try:
                return await asyncio.gather(*(client.send(claimed(server.url(f"/{n}"))) for n in range(8)))
            finally:
                await client.aclose()

        deliveries = _run(main)
        assert server.connections == 2
    assert [d.http_status for d in deliveries] == [200] * 8
    assert opened[1] == 2


def test_a_call_that_times_out_while_the_pool_is_full_leaves_the_room_to_the_next():
    async def handler(reader, writer, _):
        while True:
            try:
                request = await _read_request(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if b" /slow " in request:
                await asyncio.sleep(10)  # never answered within any timeout here
            writer.write(OK)
            await writer.drain()

    with ScriptedServer(handler) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"), max_connections=1)
            try:
                slow = asyncio.ensure_future(client.send(claimed(server.url("/slow"), timeout_seconds=2)))
                await asyncio.sleep(0.1)
                # Both wait for the one connection: the second's wait times out (at 1.1 s) before the slow
                # call's (at 2 s), and the third, still waiting then, gets the room.
                starved = asyncio.ensure_future(client.send(claimed(server.url("/a"), timeout_seconds=1)))
                patient = asyncio.ensure_future(client.send(claimed(server.url("/b"), timeout_seconds=4)))
                return await asyncio.gather(slow, starved, patient)
            finally:
                await client.aclose()

        slow, starved, patient = _run(main)
    assert slow.error == ERROR_TIMEOUT
    assert starved.error == ERROR_TIMEOUT
    assert patient.http_status == 200


def test_a_head_answer_ends_at_its_head_and_its_connection_is_not_kept():
    # A HEAD's answer carries the Content-Length of the body it does not send.
    with ScriptedServer(_serve_forever(answer=b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
            try:
                return [await client.send(claimed(server.url("/h"), method="HEAD")) for _ in range(2)]
            finally:
                await client.aclose()

        deliveries = _run(main)
        assert server.connections == 2
    assert [(d.http_status, d.response_body, d.error) for d in deliveries] == [(200, "", None)] * 2


def test_a_second_answer_sent_with_the_first_is_never_read_and_the_connection_is_dropped():
    doubled = OK + b"HTTP/1.1 201 Created\r\nContent-Length: 12\r\n\r\nFOR-TENANT-B"
    with ScriptedServer(_serve_forever(answer=doubled)) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
            try:
                return [await client.send(claimed(server.url(f"/{n}"), method="GET")) for n in range(2)]
            finally:
                await client.aclose()

        deliveries = _run(main)
        assert server.connections == 2
    assert [(d.http_status, d.response_body) for d in deliveries] == [(200, "ok")] * 2


def test_a_retry_after_header_is_reported_as_sent():
    answer = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n"
    with ScriptedServer(_serve_forever(answer=answer)) as server:
        delivery = _send_one(server)
    assert (delivery.http_status, delivery.retry_after) == (503, "120")


# -- TLS ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (an IP SAN, as a URL's literal host is checked)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jobsched test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    directory = tmp_path_factory.mktemp("tls")
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


class TLSServer(ScriptedServer):
    def __init__(self, handler, cert_path, key_path) -> None:
        super().__init__(handler)
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(cert_path, key_path)

    def url(self, path: str = "/") -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._on_connect, self.host, self.port, ssl=self._context)
        self.port = self._server.sockets[0].getsockname()[1]


def _send_tls(server: TLSServer, context: ssl.SSLContext | None):
    async def main():
        client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"), ssl_context=context)
        try:
            return [await client.send(claimed(server.url(f"/{n}"))) for n in range(2)]
        finally:
            await client.aclose()

    return _run(main)


def test_https_is_verified_against_the_trusted_certificates(certificate):
    cert_path, key_path = certificate
    trusted = ssl.create_default_context(cafile=str(cert_path))
    with TLSServer(_serve_forever(), cert_path, key_path) as server:
        deliveries = _send_tls(server, trusted)
        assert server.connections == 1  # kept alive over TLS too
    assert [(d.http_status, d.response_body) for d in deliveries] == [(200, "ok")] * 2


def test_https_to_a_certificate_nobody_trusts_fails_as_a_connection_error(certificate):
    cert_path, key_path = certificate
    with TLSServer(_serve_forever(), cert_path, key_path) as server:
        deliveries = _send_tls(server, None)  # the system's trust store: a self-signed certificate fails
    assert [(d.http_status, d.error) for d in deliveries] == [(None, ERROR_CONNECTION)] * 2


# -- answers the review found (each once against the engine, on a scripted server) --------------


def _one_answer(raw: bytes, *, close: bool = False, method: str = "POST"):
    """Send one call to a server that writes `raw` (then closes, when `close`)."""

    async def handler(reader, writer, _):
        try:
            await _read_request(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        writer.write(raw)
        await writer.drain()
        if close:
            writer.close()
        else:
            await asyncio.sleep(2)

    with ScriptedServer(handler) as server:
        return _send_one(server, method=method, timeout_seconds=5)


def test_an_endless_header_fails_the_call_at_the_heads_bound():
    # 1 MiB of one header: refused once the head passes MAX_HEAD_BYTES, not read to the timeout.
    delivery = _one_answer(b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * (1 << 20))
    assert delivery.http_status is None
    assert delivery.error is not None and delivery.error.startswith("request failed")


def test_endless_trailers_fail_the_call_too():
    trailers = b"".join(b"X-T%d: %s\r\n" % (n, b"b" * 1000) for n in range(200))
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n" + trailers + b"\r\n"
    delivery = _one_answer(raw)
    assert delivery.http_status is None and delivery.error is not None


def test_a_body_as_long_as_many_heads_is_not_counted_against_the_heads_bound():
    body = b"y" * (512 * 1024)
    delivery = _one_answer(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert delivery.http_status == 200 and delivery.response_body == "y" * 4096


def test_a_transfer_coding_other_than_chunked_is_read_up_to_the_close():
    delivery = _one_answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nall of it", close=True)
    assert (delivery.http_status, delivery.response_body) == (200, "all of it")


def test_retry_after_is_the_heads_first_and_never_a_trailers():
    raw = (
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nRetry-After: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\nRetry-After: 86400\r\n\r\n"
    )
    delivery = _one_answer(raw)
    assert (delivery.http_status, delivery.retry_after) == (503, "5")


def test_an_answer_with_bare_line_feeds_is_read_as_aiohttp_reads_it():
    delivery = _one_answer(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok")
    assert (delivery.http_status, delivery.response_body) == (200, "ok")


def test_a_connection_reset_before_any_answer_reads_connection_failed():
    async def handler(reader, writer, _):
        await _read_request(reader)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        writer.transport.abort()

    with ScriptedServer(handler) as server:
        delivery = _send_one(server)
    assert delivery.error == ERROR_CONNECTION


def test_a_full_idle_pool_lets_go_of_its_oldest_connection_not_the_one_just_used():
    # Origin A fills the idle pool (limit 2); B's connection, used one call after the other, is kept.
    with ScriptedServer(_serve_forever()) as a, ScriptedServer(_serve_forever()) as b:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"), max_connections=2)
            try:
                await asyncio.gather(*(client.send(claimed(a.url(f"/{n}"))) for n in range(2)))
                return [await client.send(claimed(b.url(f"/{n}"))) for n in range(4)]
            finally:
                await client.aclose()

        deliveries = _run(main)
        assert (a.connections, b.connections) == (2, 1)
    assert [d.http_status for d in deliveries] == [200] * 4


def test_a_waiter_woken_but_beaten_to_the_room_stays_first_in_line():
    with ScriptedServer(_serve_forever()) as server:

        async def main():
            pool = ConnectionPool(
                policy=policy_for(f"127.0.0.1:{server.port}"),
                limit=1,
                keepalive_seconds=30,
                decoder_factory=BoundedDecoder,
            )
            origin = ("tenant-a", "http", "127.0.0.1", server.port)
            held, _ = await pool.acquire(origin)
            order = []

            async def wait_for_room(name):
                connection, _ = await pool.acquire(origin)
                order.append(name)
                await asyncio.sleep(0)
                pool.release(connection, reusable=True)

            waiting = [asyncio.ensure_future(wait_for_room(name)) for name in ("w1", "w2", "w3")]
            await asyncio.sleep(0.05)  # all three queued, in this order
            pool.release(held, reusable=True)  # wakes w1 ...
            again, _ = await pool.acquire(origin)  # ... but the room is taken before w1 runs (a retry does this)
            await asyncio.sleep(0.05)
            pool.release(again, reusable=True)
            await asyncio.gather(*waiting)
            await pool.aclose()
            return order

        assert _run(main) == ["w1", "w2", "w3"]


def test_a_body_of_many_small_chunks_is_not_taken_for_a_long_head():
    # 30,000 one-byte chunks (~180 KB of framing) under a 64 KiB window: a valid answer, read whole.
    chunks = b"1\r\nx\r\n" * 30000
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"

    async def handler(reader, writer, _):
        await _read_request(reader)
        writer.write(raw)
        await writer.drain()
        await asyncio.sleep(2)

    with ScriptedServer(handler) as server:

        async def main():
            client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"), body_limit=65536)
            try:
                return await client.send(claimed(server.url("/")))
            finally:
                await client.aclose()

        delivery = _run(main)
    assert (delivery.http_status, delivery.response_body) == (200, "x" * 30000)


class _TwoAddresses(AbstractResolver):
    calls = 0

    async def resolve(self, host, port=0, family=socket.AF_INET):
        self.calls += 1
        return [
            {"hostname": host, "host": address, "port": port, "family": socket.AF_INET, "proto": 0, "flags": 0}
            for address in ("127.0.0.1", "127.0.0.2")
        ]

    async def close(self):
        pass


def test_a_cached_names_addresses_take_turns_at_being_dialled_first():
    # Unit level (no dial): as aiohttp's DNS cache rotates them, so one silent address does not
    # hold up every dial of the cache's 10 s.
    resolver = _TwoAddresses()

    async def main():
        pool = ConnectionPool(
            policy=policy_for("127.0.0.1:8080", "127.0.0.2:8080"),
            limit=1,
            keepalive_seconds=30,
            decoder_factory=BoundedDecoder,
            resolver=resolver,
        )
        firsts = [(await pool._addresses("hooks.example.com", 8080))[0][4][0] for _ in range(4)]
        await pool.aclose()
        return firsts

    assert _run(main) == ["127.0.0.1", "127.0.0.2", "127.0.0.1", "127.0.0.2"]
    assert resolver.calls == 1
