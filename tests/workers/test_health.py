"""A worker's /healthz follows its heartbeat; /metrics serves the process's metrics."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.processes import wait_until
from workers.health import HealthServer, Heartbeat, serve_health


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _heartbeat(clock, **limits):
    return Heartbeat(
        "test-loop", stuck_after=limits.get("stuck", 10), db_unreachable_after=limits.get("db", 30), clock=clock
    )


def test_a_fresh_heartbeat_is_healthy():
    healthy, body = _heartbeat(FakeClock()).status()
    assert healthy
    assert body["status"] == "ok"


def test_a_loop_that_stops_beating_is_unhealthy_after_the_limit():
    clock = FakeClock()
    beat = _heartbeat(clock, stuck=10)
    clock.now += 9.9
    assert beat.status()[0]
    clock.now += 0.2
    healthy, body = beat.status()
    assert not healthy
    assert "no loop iteration" in body["problems"][0]
    beat.beat()
    assert beat.status()[0]


def test_a_database_unreachable_longer_than_the_limit_is_unhealthy_even_while_the_loop_beats():
    clock = FakeClock()
    beat = _heartbeat(clock, db=30)
    beat.database_failed()
    for _ in range(4):
        clock.now += 8
        beat.beat()
        beat.database_failed()  # later failures keep the outage's start
    healthy, body = beat.status()
    assert not healthy
    assert body["database_unreachable_seconds"] == 32
    beat.database_answered()
    healthy, body = beat.status()
    assert healthy
    assert body["database_unreachable_seconds"] is None
    assert "problems" not in body


def test_a_short_outage_stays_healthy():
    clock = FakeClock()
    beat = _heartbeat(clock, db=30)
    beat.database_failed()
    clock.now += 29
    beat.beat()
    assert beat.status()[0]


@pytest.fixture
def server():
    clock = FakeClock()
    beat = _heartbeat(clock, stuck=10)
    server = HealthServer(beat, port=0, host="127.0.0.1").start()
    yield server, beat, clock
    server.close()


def _get(port, path, host="127.0.0.1"):
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_the_server_answers_healthz_from_the_heartbeat(server):
    server, _beat, clock = server
    status, content_type, body = _get(server.port, "/healthz")
    assert (status, content_type, json.loads(body)["loop"]) == (200, "application/json", "test-loop")
    clock.now += 11
    status, _, body = _get(server.port, "/healthz")
    assert status == 503
    assert json.loads(body)["status"] == "unhealthy"


def test_the_server_answers_metrics_in_the_text_format(server):
    server, beat, _ = server
    beat.beat()
    status, content_type, body = _get(server.port, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    assert 'jobsched_loop_iterations_total{loop="test-loop"}' in body


def test_other_paths_are_404(server):
    server, _, _ = server
    assert _get(server.port, "/")[0] == 404


def _idle_connections(port, count, host="127.0.0.1"):
    conns = []
    for _ in range(count):
        conn = socket.create_connection((host, port), timeout=5)
        conns.append(conn)
    return conns


def _closed_by_server(conn, within):
    """True when the server closes `conn` (EOF or reset) within `within` seconds."""
    conn.settimeout(within)
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _handler_threads():
    return sum(1 for thread in threading.enumerate() if "process_request" in thread.name)


@pytest.fixture
def capped(settings):
    settings.WORKER_METRICS_MAX_CONNECTIONS = 4
    settings.WORKER_METRICS_TIMEOUT_SECONDS = 1.5
    settings.WORKER_METRICS_HOST = "127.0.0.1"
    server = serve_health(_heartbeat(FakeClock()), 0)
    yield server
    server.close()


def _still_open_after(conns, seconds):
    """The connections the server has not closed (EOF or reset) within `seconds`, watched together."""
    still_open = set(conns)
    deadline = time.monotonic() + seconds
    while still_open and (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select(list(still_open), [], [], left)
        for conn in readable:
            try:
                data = conn.recv(1)
            except ConnectionResetError:
                data = b""
            if data == b"":
                still_open.discard(conn)
    return still_open


def test_idle_connections_past_the_cap_are_closed_at_once_and_threads_stay_bounded(capped):
    conns = _idle_connections(capped.port, 40)
    try:
        still_open = _still_open_after(conns, 1.0)  # less than the 1.5 s timeout: only the cap closed them
        assert len(still_open) == 4
        assert _handler_threads() <= 4
    finally:
        for conn in conns:
            conn.close()


def test_idle_connections_are_closed_after_the_timeout_and_the_server_answers_again(capped):
    conns = _idle_connections(capped.port, 4)  # every slot taken by a client that sends nothing
    try:
        started = time.monotonic()
        assert all(_closed_by_server(conn, within=5) for conn in conns)
        assert 1.0 <= time.monotonic() - started < 4
        assert _get(capped.port, "/healthz")[0] == 200
        wait_until(lambda: _handler_threads() == 0, timeout=5, what="the handler threads ending")
    finally:
        for conn in conns:
            conn.close()


def test_the_server_listens_on_loopback_unless_told_otherwise(settings):
    server = serve_health(_heartbeat(FakeClock()), 0)
    try:
        assert server.address == ("127.0.0.1", server.port)
    finally:
        server.close()


def test_the_bind_setting_is_honoured(settings):
    settings.WORKER_METRICS_HOST = "127.0.0.2"
    server = serve_health(_heartbeat(FakeClock()), 0)
    try:
        assert _get(server.port, "/healthz", host="127.0.0.2")[0] == 200
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
    finally:
        server.close()


def test_a_client_dripping_its_request_is_cut_at_the_deadline_and_probes_get_through(capped):
    """Slowloris: a header line every 0.5 s never trips a per-read timeout (1.5 s); the whole connection's does."""
    conns = _idle_connections(capped.port, 4)  # every slot
    for conn in conns:
        conn.sendall(b"GET /healthz HTTP/1.1\r\n")
    started = time.monotonic()
    try:
        while (still := _still_open_after(conns, 0.5)) and time.monotonic() - started < 6:
            for conn in still:
                with contextlib.suppress(OSError):
                    conn.sendall(b"X-Drip: 1\r\n")
        assert not still, "a dripping client kept its slot past the deadline"
        assert time.monotonic() - started < 4
        # A slot is free once its handler thread has seen the cut and ended (a moment after the close).
        wait_until(lambda: _handler_threads() == 0, timeout=5, what="the cut connections' handlers ending")
        assert _get(capped.port, "/healthz")[0] == 200
    finally:
        for conn in conns:
            conn.close()
