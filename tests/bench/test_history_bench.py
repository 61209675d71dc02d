"""The history benchmark still runs end to end on both stores (tiny load; figures come from `make bench-history`)."""

from __future__ import annotations

import json
import subprocess
import sys

import MySQLdb
import pytest
from django.conf import settings

from tests.cassandra_node import hosts, needs_cassandra
from tests.processes import child_env
from tests.workers.scheduler_processes import ROOT

pytestmark = [pytest.mark.django_db, pytest.mark.cassandra, needs_cassandra]


@pytest.fixture
def bench_database():
    name = settings.DATABASES["default"]["NAME"] + "_bench_history"
    yield name
    db = settings.DATABASES["default"]
    server = MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306), user=db["USER"], password=db["PASSWORD"] or ""
    )
    with server.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    server.close()


def test_the_benchmark_moves_every_job_reads_full_pages_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "history.json"
    arguments = ["--jobs", "600", "--history-jobs", "400", "--samples", "5", "--limit", "20"]
    arguments += ["--database", bench_database, "--keyspace", "jobsched_bench_test", "--output", str(output)]

    finished = subprocess.run(
        [sys.executable, "-m", "bench.history", *arguments],
        cwd=ROOT,
        env=child_env(CASSANDRA_HOSTS=",".join(hosts())),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
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
