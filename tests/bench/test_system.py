"""`python -m bench.system` runs end to end at a small N (the figures come from `make bench`, not from here)."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from tests.bench.runs import run_bench

pytestmark = pytest.mark.django_db

HAS_CELERY_SIDE = bool(importlib.util.find_spec("celery") and importlib.util.find_spec("redis")) and bool(
    shutil.which("redis-server")
)
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def run_system(*args: str) -> tuple[int, str]:
    done = run_bench("-m", "bench.system", *args, timeout=400)
    return done.returncode, done.stdout + done.stderr


def test_every_task_is_called_exactly_once_and_the_figures_are_written(bench_database, tmp_path):
    systems = "jobsched,celery" if HAS_CELERY_SIDE else "jobsched"
    args = ["--tasks", "200", "--tenants", "7", "--lead-seconds", "6", "--database", bench_database("_sysbench")]
    args += ["--systems", systems, "--out-dir", str(tmp_path), "--celery-concurrency", "2"]
    code, output = run_system(*args, *([] if HAS_MATPLOTLIB else ["--no-plots"]))
    assert code == 0, output
    result = json.loads((tmp_path / "system.json").read_text())
    assert result["tasks"] == 200
    assert set(result["systems"]) == set(systems.split(","))
    for name, figures in result["systems"].items():
        assert figures["complete"] is True, name
        assert (figures["calls"], figures["lost"], figures["duplicated"], figures["duplicate_keys"]) == (200, 0, 0, 0)
        assert set(figures["fire_seconds"]) == {"first", "p50", "p95", "p99", "last"}
        assert figures["fire_seconds"]["first"] <= figures["fire_seconds"]["p50"] <= figures["fire_seconds"]["last"]
        assert figures["last_job_existed_seconds"] is not None
        assert figures["cpu_ms_per_job"] and all(value >= 0 for value in figures["cpu_ms_per_job"].values())
    jobsched = result["systems"]["jobsched"]
    assert jobsched["statuses"] == {"succeeded": 200}
    assert jobsched["exit_codes"] == {"scheduler": 0, "executor-0": 0, "executor-1": 0, "reconciler": 0}
    assert {"scheduler", "executors", "reconciler", "database_server"} <= set(jobsched["cpu_ms_per_job"])
    if HAS_MATPLOTLIB:
        for png in ("system-fired-per-100ms.png", "system-lateness-cdf.png"):
            assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_bad_option_is_refused_with_its_name(tmp_path):
    code, output = run_system("--systems", "sidekiq", "--out-dir", str(tmp_path))
    assert code == 2
    assert "--systems" in output and "sidekiq" in output
