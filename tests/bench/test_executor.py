"""bench.executor still runs end to end (a tiny load; the figures come from `make bench-executor`)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.db import connection

from tests.processes import child_env, start_manage

pytestmark = pytest.mark.django_db


@pytest.fixture
def bench_database():
    name = settings.DATABASES["default"]["NAME"] + "_benchexec"
    yield name
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")


def test_the_benchmark_fires_every_job_once_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "executor.json"
    log = tmp_path / "bench.log"
    bench = start_manage(
        "bench_executor",
        "--jobs",
        "300",
        "--future-jobs",
        "500",
        "--executors",
        "2",
        "--concurrency",
        "50",
        "--lead-seconds",
        "3",
        "--database",
        bench_database,
        "--out",
        str(output),
        env=child_env(DJANGO_SETTINGS_MODULE="bench.settings"),
        log_path=log,
    )
    assert bench.wait(240) == 0, log.read_text()
    figures = json.loads(output.read_text())
    assert figures["checks"]["all_succeeded"] is True
    assert figures["checks"]["each_key_seen_exactly_once"] is True
    assert figures["statuses"] == {"succeeded": 300}
    assert figures["lateness_seconds"]["min"] >= 0  # nothing fired before its second
    assert figures["claim"]["empty_poll_ms_per_priority_probe"] > 0
    assert figures["executor_cpu_ms_per_fired_job"] > 0
