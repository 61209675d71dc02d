"""The history benchmark still runs end to end on both stores (tiny load; figures come from `make bench-history`)."""

from __future__ import annotations

import json

import pytest

from tests.bench.runs import run_bench
from tests.cassandra_node import hosts, needs_cassandra
from tests.processes import child_env

pytestmark = [pytest.mark.django_db, pytest.mark.cassandra, needs_cassandra]


def test_the_benchmark_moves_every_job_reads_full_pages_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "history.json"
    arguments = ["--jobs", "600", "--history-jobs", "400", "--samples", "5", "--limit", "20"]
    arguments += ["--database", bench_database("_bench_history"), "--keyspace", "jobsched_bench_test"]
    arguments += ["--output", str(output)]

    finished = run_bench(
        "-m", "bench.history", *arguments, timeout=300, env=child_env(CASSANDRA_HOSTS=",".join(hosts()))
    )
    assert finished.returncode == 0, finished.stderr[-3000:]

    report = json.loads(output.read_text())
    assert set(report["archiver"]) == {"sql", "cassandra"}
    assert all(run["jobs"] == 600 and run["jobs_per_second"] > 0 for run in report["archiver"].values())
    for store in ("sql", "cassandra"):
        reads = report["reads"][store]
        assert {kind: figures["samples"] for kind, figures in reads.items() if kind != "seed_write_s"} == {
            "store_first_page": 5,
            "store_random_page": 5,
            "task_history_first_page": 5,
            "task_history_random_page": 5,
        }
        assert all(0 < reads[kind]["p50_ms"] <= reads[kind]["p99_ms"] for kind in reads if kind != "seed_write_s")
