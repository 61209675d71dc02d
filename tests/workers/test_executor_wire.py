"""The aiohttp engine's own request head (outbound.wire) and its send on a pooled connection.

The head is compared byte for byte with what aiohttp's `ClientSession.request` wrote for the same
call; the send is run on both engines against scripted servers for what a plain receiver never
does: interim 1xx answers, a body up to the close, a malformed answer, a kept-alive connection
closed under a reused call.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from outbound.client import DeliveryClient
from outbound.wire import parse_url, request_head
from tests.receivers import Receiver, ScriptedServer
from tests.workers import executor_helpers
from tests.workers.executor_helpers import claimed, policy_for

# -- the head ---------------------------------------------------------------------------------


def test_a_post_head_is_the_one_aiohttps_request_wrote():
    head = request_head("POST", parse_url("http://127.0.0.1:8080/hook?a=1&b=%20x"), {"X-A": "1"}, {"X-Ours": "k"}, 8)
    assert head == (
        b"POST /hook?a=1&b=%20x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nX-Ours: k\r\n"
        b"Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nContent-Length: 8\r\n"
        b"Content-Type: application/octet-stream\r\n\r\n"
    )


def test_a_get_without_a_body_has_no_length_and_other_methods_say_zero():
    url = parse_url("https://example.com/")
    get = request_head("GET", url, {}, {}, None)
    assert get == b"GET / HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate\r\n\r\n"
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        assert b"\r\nContent-Length: 0\r\n" in request_head(method, url, {}, {}, None)
    for method in ("HEAD", "OPTIONS"):
        assert b"Content-Length" not in request_head(method, url, {}, {}, None)


def test_the_host_names_a_non_default_port_and_brackets_an_ipv6_literal():
    assert b"\r\nHost: example.com\r\n" in request_head("GET", parse_url("http://example.com:80/x"), {}, {}, None)
    assert b"\r\nHost: [::1]:8443\r\n" in request_head("GET", parse_url("https://[::1]:8443/x"), {}, {}, None)
    idna = request_head("GET", parse_url("http://bücher.example/"), {}, {}, None)
    assert b"\r\nHost: xn--bcher-kva.example\r\n" in idna


def test_the_tasks_accept_and_content_type_replace_the_defaults_whatever_their_case():
    head = request_head(
        "POST", parse_url("http://127.0.0.1/"), {"accept": "application/json", "content-type": "t/p"}, {}, 2
    )
    assert b"accept: application/json\r\n" in head and b"*/*" not in head
    assert b"content-type: t/p\r\n" in head and b"octet-stream" not in head


def test_our_header_wins_over_a_tasks_header_of_the_same_name_in_any_case():
    head = request_head(
        "POST", parse_url("http://127.0.0.1/"), {"x-attempt": "99", "X-Other": "1"}, {"X-Attempt": "2"}, 2
    )
    assert b"99" not in head
    assert head.count(b"ttempt") == 1 and b"X-Attempt: 2\r\n" in head and b"X-Other: 1\r\n" in head


def test_a_tasks_own_framing_headers_are_left_out():
    task = {"Host": "internal", "content-length": "99", "Transfer-Encoding": "chunked", "X-Ok": "1"}
    head = request_head("POST", parse_url("http://127.0.0.1/"), task, {}, 2)
    assert b"internal" not in head and b"99" not in head and b"chunked" not in head
    assert head.count(b"Host:") == 1 and b"Content-Length: 2\r\n" in head and b"X-Ok: 1\r\n" in head


def test_every_name_the_api_forbids_is_left_out_of_an_old_jobs_headers():
    # A job written before the API's header rules (or by hand) still sends none of them.
    task = {"Cookie": "a=1", "Upgrade": "h2c", "TE": "trailers", "Expect": "100-continue", "Proxy-Authorization": "x"}
    head = request_head("POST", parse_url("http://127.0.0.1/"), {**task, "X-Ok": "1"}, {}, 2)
    for name in task:
        assert name.encode() + b":" not in head
    assert b"X-Ok: 1\r\n" in head


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A": "1\r\nX-Injected: 1"},
        {"X-A": "1\nX"},
        {"X-A\r\nX-B": "1"},
        {"X-A: 1\r\n": "x"},
        {"X-A": "a\x00b"},
        # What aiohttp's writer refused too: other control characters, which lenient servers read as
        # white space (a second Content-Length, or a Transfer-Encoding beside ours).
        {"Content-Length\x0b": "0"},
        {"X-A": "1\x0cTransfer-Encoding: chunked"},
        {"X-A": "\x1b[31m"},
        {"X-A": "X\x7f"},
    ],
)
def test_a_header_that_would_break_the_request_is_refused(headers):
    with pytest.raises(ValueError):
        request_head("POST", parse_url("http://127.0.0.1/"), headers, {}, None)
    with pytest.raises(ValueError):  # ours are checked alike (a secret's value)
        request_head("POST", parse_url("http://127.0.0.1/"), {}, headers, None)


@pytest.mark.parametrize(
    "headers",
    # Names the API refuses (not a token), which the framing filter's exact names would let through.
    [{"Transfer-Encoding ": "chunked"}, {"Host:x": "y"}, {"X A": "1"}, {"X-Ü": "1"}, {"X-A": "é"}, {"X-A": 1}],
)
def test_a_task_header_the_api_would_refuse_is_refused_here_too(headers):
    with pytest.raises(ValueError):
        request_head("POST", parse_url("http://127.0.0.1/"), headers, {}, None)


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("CONNECT", "http://127.0.0.1/"),
        ("GET /x HTTP/1.1\r\n", "http://127.0.0.1/"),
        ("GET", "/relative"),
        ("GET", "http://h\x00/"),  # yarl keeps these hosts as given
        ("GET", "http://h x/"),
    ],
)
def test_an_unknown_method_or_a_url_without_a_host_is_refused(method, url):
    with pytest.raises(ValueError):
        request_head(method, parse_url(url), {}, {}, None)


# -- the send, on both engines ------------------------------------------------------------------


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    return head + await reader.readexactly(length)


def _send_all(server: ScriptedServer, *jobs):
    """Send the jobs one after the other on one client (so a kept-alive connection is reused)."""

    async def main():
        client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
        try:
            return [await client.send(job) for job in jobs]
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_an_interim_100_answer_is_skipped_for_the_final_one():
    async def handler(reader, writer, _):
        await _read_request(reader)
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone")
        await writer.drain()

    with ScriptedServer(handler) as server:
        (delivery,) = _send_all(server, claimed(server.url("/hook"), body="{}"))
    assert (delivery.http_status, delivery.response_body, delivery.error) == (201, "done", None)


def test_an_answer_without_a_length_is_read_up_to_the_close():
    async def handler(reader, writer, _):
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nRetry-After: 7\r\n\r\nall of it")
        await writer.drain()

    with ScriptedServer(handler) as server:
        (delivery,) = _send_all(server, claimed(server.url("/hook")))
    assert (delivery.http_status, delivery.response_body, delivery.retry_after) == (200, "all of it", "7")


def test_a_malformed_answer_fails_the_attempt_with_a_request_error():
    async def handler(reader, writer, _):
        await _read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        await writer.drain()

    with ScriptedServer(handler) as server:
        (delivery,) = _send_all(server, claimed(server.url("/hook")))
    assert delivery.http_status is None
    assert delivery.error is not None and delivery.error.startswith("request failed")


def _answers_once_per_connection(requests: list[bytes]):
    """Answer a connection's first request (kept alive), then close it when its second arrives."""

    async def handler(reader, writer, _):
        requests.append(await _read_request(reader))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        with contextlib.suppress(asyncio.IncompleteReadError):  # the client closed it first
            await _read_request(reader)  # then closed unanswered (ScriptedServer._on_connect)

    return handler


def test_an_idempotent_call_on_a_kept_alive_connection_closed_under_it_is_sent_once_more():
    requests: list[bytes] = []
    with ScriptedServer(_answers_once_per_connection(requests)) as server:
        first, second = _send_all(
            server, claimed(server.url("/a"), method="GET"), claimed(server.url("/b"), method="GET")
        )
        connections = server.connections
    assert (first.http_status, second.http_status) == (200, 200)
    assert connections == 2  # the reused one was closed; the second call went out on a new one
    assert [request.split(b" ")[1] for request in requests if request] == [b"/a", b"/b"]


def test_a_post_on_a_kept_alive_connection_closed_under_it_is_not_sent_again():
    requests: list[bytes] = []
    with ScriptedServer(_answers_once_per_connection(requests)) as server:
        first, second = _send_all(server, claimed(server.url("/a")), claimed(server.url("/b")))
        connections = server.connections
    assert first.http_status == 200
    assert second.http_status is None and second.error is not None  # failed: the job's retry decides
    assert connections == 1


def test_a_header_that_would_inject_another_fails_the_attempt_and_sends_nothing():
    with Receiver() as receiver:
        job = claimed(receiver.url("/hook"), headers={"X-A": "1\r\nX-Injected: 1"})
        delivery = executor_helpers.send(job, policy=policy_for(f"127.0.0.1:{receiver.port}"))
        received = receiver.received()
    assert delivery.http_status is None and delivery.error is not None
    assert received == []


def test_an_answer_nobody_asked_for_on_an_idle_connection_never_reaches_the_next_call():
    # The server answers, then writes a second answer while the connection sits idle in the pool
    # (a desynchronised server): the next call, maybe another tenant's, gets its own answer.
    requests: list[bytes] = []

    async def handler(reader, writer, _):
        while True:
            try:
                requests.append(await _read_request(reader))
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
            await writer.drain()
            await asyncio.sleep(0.02)
            writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 12\r\n\r\nFOR-TENANT-A")
            await writer.drain()

    async def main(server):
        client = DeliveryClient(policy=policy_for(f"127.0.0.1:{server.port}"))
        try:
            first = await client.send(claimed(server.url("/a"), method="GET", tenant_id="tenant-a"))
            await asyncio.sleep(0.2)  # the unsolicited answer arrives while the connection is idle
            second = await client.send(claimed(server.url("/b"), method="GET", tenant_id="tenant-b"))
            return first, second
        finally:
            await client.aclose()

    with ScriptedServer(handler) as server:
        first, second = asyncio.run(main(server))
    assert (first.http_status, first.response_body) == (200, "first")
    assert (second.http_status, second.response_body) == (200, "first")  # its own answer, not the 201
    assert [request.split(b" ")[1] for request in requests] == [b"/a", b"/b"]


BIG = 8 * 1024 * 1024


def test_a_body_cut_at_the_bound_closes_the_connection_instead_of_pooling_it():
    async def handler(reader, writer, _):
        while True:
            try:
                await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            # Bigger than the client buffers: the answer is still arriving when the call stops reading.
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % BIG + b"x" * BIG)
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    with ScriptedServer(handler) as server:
        first, second = _send_all(server, claimed(server.url("/a")), claimed(server.url("/b")))
        connections = server.connections
    assert first.http_status == second.http_status == 200
    assert len(first.response_body) <= 4096
    assert connections == 2  # the unread rest never reaches the next call as its answer
