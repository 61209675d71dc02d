"""A worker's /healthz follows its heartbeat; /metrics serves the process's metrics."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from workers.health import HealthServer, Heartbeat


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


def _get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
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
