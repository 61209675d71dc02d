"""bench.fairness still runs end to end (a tiny load; the figures come from `make bench-fairness`)."""

from __future__ import annotations

import json

import pytest

from tests.bench.runs import run_bench_command

pytestmark = pytest.mark.django_db


def test_the_benchmark_measures_the_claim_and_both_modes_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "fairness.json"
    args = ["--burst", "300", "--small-jobs", "2", "--concurrency", "50", "--future-jobs", "500"]
    args += ["--claim-tenants", "50", "--claim-samples", "1", "--lead-seconds", "3"]
    args += ["--database", bench_database("_benchfair"), "--out", str(output)]
    finished = run_bench_command("bench_fairness", *args, timeout=300)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    figures = json.loads(output.read_text())
    cost = figures["claim_cost"]
    assert cost["empty_poll_ms"] > 0 and cost["fair"]["jobs_per_claim_p50"] == 3 * 50 + 300
    for mode in ("off", "on"):
        run = figures["noisy_neighbour"][mode]
        assert run["checks"] == {"all_succeeded": True, "each_key_seen_exactly_once": True}
        assert run["statuses"] == {"succeeded": 320}
        assert run["tenants_b_to_k_lateness_seconds"]["min"] >= 0  # nothing fired before its second
    assert "tenant_a_drain_on_vs_off" in figures


def test_bad_modes_are_refused():
    finished = run_bench_command("bench_fairness", "--modes", "sideways", timeout=60)
    assert finished.returncode != 0
    assert "--modes" in finished.stderr
