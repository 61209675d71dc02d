"""bench.scheduler still runs end to end (a tiny load; the figures come from `make bench-scheduler`)."""

from __future__ import annotations

import json

import pytest

from tests.bench.runs import run_bench_command

pytestmark = pytest.mark.django_db


def test_the_benchmark_checks_every_job_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "scheduler.json"
    args = ["--tasks", "300", "--batch-size", "100", "--repeat", "1", "--schedulers", "2"]
    args += ["--database", bench_database("_bench"), "--output", str(output)]

    finished = run_bench_command("bench_scheduler", *args, timeout=180)

    assert finished.returncode == 0, finished.stderr
    report = json.loads(output.read_text())
    assert [(run["mode"], run["schedulers"]) for run in report["runs"]] == [("in-process", 1), ("processes", 2)]
    for run in report["runs"]:
        assert run["jobs"] == run["distinct_task_scheduled_at"] == run["tasks_with_a_job"] == 300
        assert run["jobs_scheduled_at_due"] == 300 and run["tasks_not_advanced"] == 0
        # Measured, not a constant: jobs/s agrees with the reported seconds (rounded to 1 ms).
        assert 300 / (run["seconds"] + 0.0005) - 1 <= run["jobs_per_second"] <= 300 / (run["seconds"] - 0.0005) + 1
        assert run["statements_per_tick"] == [3]
        assert run["ticks"] >= 2 and run["seconds"] > 0
    # One scheduler's catch-up ramps: 100 tasks, then 200 (the scheduler's CATCH_UP_FACTOR).
    assert report["runs"][0]["ticks"] == 2
    assert "jobs/s" in finished.stdout


def test_the_benchmark_refuses_a_database_that_is_not_a_bench_one():
    # Not the test database's name, which may contain "bench"; nor a real one, should the check ever fail.
    finished = run_bench_command("bench_scheduler", "--database", "jobsched_unchecked", timeout=60)

    assert finished.returncode != 0
    assert "must contain 'bench'" in finished.stderr
