"""bench.fairness still runs end to end (a tiny load; the figures come from `make bench-fairness`)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.db import connection

from tests.processes import child_env, start_manage

pytestmark = pytest.mark.django_db


@pytest.fixture
def bench_database():
    name = settings.DATABASES["default"]["NAME"] + "_benchfair"
    yield name
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


def test_the_benchmark_measures_the_claim_and_both_modes_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "fairness.json"
    log = tmp_path / "bench.log"
    args = ["--burst", "300", "--small-jobs", "2", "--concurrency", "50", "--future-jobs", "500"]
    args += ["--claim-tenants", "50", "--claim-samples", "1", "--lead-seconds", "3"]
    bench = start_manage(
        "bench_fairness",
        *args,
        "--database",
        bench_database,
        "--out",
        str(output),
        env=child_env(DJANGO_SETTINGS_MODULE="bench.settings"),
        log_path=log,
    )
    assert bench.wait(300) == 0, log.read_text()
    figures = json.loads(output.read_text())
    cost = figures["claim_cost"]
    assert cost["empty_poll_ms"] > 0 and cost["fair"]["jobs_per_claim_p50"] == 3 * 50 + 300
    for mode in ("off", "on"):
        run = figures["noisy_neighbour"][mode]
        assert run["checks"] == {"all_succeeded": True, "each_key_seen_exactly_once": True}
        assert run["statuses"] == {"succeeded": 320}
        assert run["tenants_b_to_k_lateness_seconds"]["min"] >= 0  # nothing fired before its second
    assert "tenant_a_drain_on_vs_off" in figures


def test_bad_modes_are_refused(tmp_path):
    bench = start_manage(
        "bench_fairness", "--modes", "sideways", env=child_env(DJANGO_SETTINGS_MODULE="bench.settings")
    )
    assert bench.wait(60) != 0
