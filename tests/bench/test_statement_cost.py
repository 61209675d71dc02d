"""The statement-cost benchmark still runs end to end (tiny load; figures from its own command)."""

from __future__ import annotations

import json

import pytest

from bench.statement_cost import statement_name
from jobs.queue.statements import STATEMENTS
from tests.bench.runs import run_bench

pytestmark = pytest.mark.django_db


def test_the_benchmark_claims_and_writes_every_job_and_names_the_statements_it_paid_for(bench_database, tmp_path):
    output = tmp_path / "statement_cost.json"
    arguments = ["--jobs", "120", "--tenants", "7", "--claims", "20,50", "--batch", "40"]
    finished = run_bench(
        "-m", "bench.statement_cost", *arguments, "--database", bench_database("_stmt"), "--output", str(output),
        timeout=300,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(output.read_text())
    assert set(report["by_claim_size"]) == {"20", "50"}
    for run in report["by_claim_size"].values():
        statements = run["statements"]
        assert {"claim_mark_running", "fair_walk", "result_lock_fenced", "result_write"} <= set(statements)
        assert statements["result_write"]["count"] == 3  # 120 results, 40 a write
        assert run["server_us_per_job"] > 0
    # Bigger claims: fewer claims, each marking more jobs.
    counts = {size: run["statements"]["claim_mark_running"]["count"] for size, run in report["by_claim_size"].items()}
    assert counts["50"] < counts["20"]


def test_the_shipped_statements_get_their_own_names():
    shipped = ("result_write", "result_update_tasks", "claim_mark_running", "result_lock_fenced", "result_lock_tasks")
    for name in shipped:
        assert statement_name(STATEMENTS[name].head + STATEMENTS[name].tail) == name


def test_bad_options_are_refused():
    finished = run_bench("-m", "bench.statement_cost", "--claims", "ten", timeout=60)
    assert finished.returncode == 2 and "--claims" in finished.stderr
