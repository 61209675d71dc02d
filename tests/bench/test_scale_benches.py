"""The scale benches' plumbing: wrk's output parsed, the empty-poll bench end to end at a tiny size."""

from __future__ import annotations

import json

import pytest

from bench.api import parse_wrk
from bench.figures import bins_per_100ms, fire_figures
from tests.bench.runs import run_bench

WRK_OUTPUT = """Running 10s test @ http://127.0.0.1:8000/v1/tasks
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    12.71ms    3.02ms  41.10ms   80.12%
    Req/Sec   630.12     50.10   720.00     70.00%
  Latency Distribution
     50%   12.20ms
     75%   14.01ms
     90%   16.30ms
     99%    1.02s
  12600 requests in 10.01s, 9.10MB read
  Non-2xx or 3xx responses: 3
Requests/sec:   1258.74
Transfer/sec:      0.91MB
"""


def test_wrk_output_gives_the_rate_the_latency_percentiles_and_the_errors():
    figures = parse_wrk(WRK_OUTPUT)
    assert figures == {
        "requests_per_second": 1258.74,
        "p50_ms": 12.2,
        "p90_ms": 16.3,
        "p99_ms": 1020.0,
        "requests": 12600,
        "non_2xx": 3,
        "socket_errors": 0,
    }


def test_fire_figures_count_lost_and_duplicated_tasks_and_unexpected_calls():
    arrivals = [(100.5, "k1", "", "0"), (100.2, "k2", "", "1"), (100.9, "k2", "", "1"), (101.0, "k9", "", "77")]
    figures = fire_figures(arrivals, due=100.0, tasks=3)
    assert (figures["calls"], figures["lost"], figures["duplicated"], figures["duplicate_keys"]) == (4, 1, 1, 1)
    assert figures["unexpected"] == 1
    assert figures["fire_seconds"]["first"] == pytest.approx(0.2) and figures["fire_seconds"]["last"] == 1.0
    assert fire_figures([], due=0.0, tasks=2)["lost"] == 2


def test_calls_are_binned_per_100_ms_from_the_first_to_the_last():
    starts, counts = bins_per_100ms([0.01, 0.05, 0.31, -0.02])
    assert starts == [-0.1, 0.0, 0.1, 0.2, 0.3] and counts == [1, 2, 0, 0, 1]
    assert bins_per_100ms([]) == ([], [])


@pytest.mark.django_db
def test_the_empty_poll_bench_times_the_claim_with_nothing_due(bench_database, tmp_path):
    args = ["--future-jobs", "0,300", "--polls", "5", "--single-query-polls", "2"]
    args += ["--database", bench_database("_emptypoll"), "--out-dir", str(tmp_path)]
    done = run_bench("-m", "bench.empty_poll", *args, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "empty_poll.json").read_text())
    assert [row["future_jobs"] for row in result["results"]] == [0, 300]
    for row in result["results"]:
        assert row["claim_due"]["polls"] == 5 and row["claim_due"]["mean_ms"] > 0
        assert row["single_order_by"]["polls"] == 2
