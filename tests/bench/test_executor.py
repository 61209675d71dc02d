"""bench.executor still runs end to end (a tiny load; the figures come from `make bench-executor`)."""

from __future__ import annotations

import json

import pytest

from tests.bench.runs import run_bench_command

pytestmark = pytest.mark.django_db


def test_the_benchmark_fires_every_job_once_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "executor.json"
    args = ["--jobs", "300", "--future-jobs", "500", "--executors", "2", "--concurrency", "50", "--lead-seconds", "3"]
    args += ["--database", bench_database("_benchexec"), "--out", str(output)]
    finished = run_bench_command("bench_executor", *args, timeout=240)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    figures = json.loads(output.read_text())
    assert figures["checks"]["all_succeeded"] is True
    assert figures["checks"]["each_key_seen_exactly_once"] is True
    assert figures["statuses"] == {"succeeded": 300}
    assert figures["lateness_seconds"]["min"] >= 0  # nothing fired before its second
    assert figures["claim"]["empty_poll_ms_per_priority_probe"] > 0
    assert figures["executor_cpu_ms_per_fired_job"] > 0
