"""The executor benchmark still runs end to end (a tiny load; the figures come from `make bench-executor`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import MySQLdb
import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def bench_database():
    name = settings.DATABASES["default"]["NAME"] + "_benchexec"
    yield name
    db = settings.DATABASES["default"]
    server = MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306), user=db["USER"], password=db["PASSWORD"] or ""
    )
    with server.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    server.close()


def test_the_benchmark_fires_every_job_once_and_writes_its_figures(bench_database, tmp_path):
    output = tmp_path / "executor.json"
    finished = subprocess.run(
        [
            sys.executable,
            "manage.py",
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
        ],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    figures = json.loads(output.read_text())
    assert figures["checks"]["all_succeeded"] is True
    assert figures["checks"]["each_key_seen_exactly_once"] is True
    assert figures["statuses"] == {"succeeded": 300}
    assert figures["lateness_seconds"]["min"] >= 0  # nothing fired before its second
    assert figures["claim"]["empty_poll_ms_per_priority_probe"] > 0
    assert figures["executor_cpu_ms_per_fired_job"] > 0
