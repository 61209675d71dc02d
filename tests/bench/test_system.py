"""`python -m bench.system` runs end to end at a small N (the figures come from `make bench`, not from here)."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from bench.figures import stall_figures
from bench.system import goals
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
    systems = "jobsched,jobsched-cold" + (",celery" if HAS_CELERY_SIDE else "")
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
    for name in ("jobsched", "jobsched-cold"):
        jobsched = result["systems"][name]
        assert jobsched["statuses"] == {"succeeded": 200}
        assert jobsched["exit_codes"] == {"scheduler": 0, "executor-0": 0, "executor-1": 0, "reconciler": 0}
        assert {"scheduler", "executors", "reconciler", "database_server"} <= set(jobsched["cpu_ms_per_job"])
        assert 0 <= jobsched["stalls"]["longest_gap_seconds"] <= jobsched["fire_seconds"]["last"]
    # Cold: the processes started at the second, so the first call waited for them to start.
    assert result["systems"]["jobsched-cold"]["processes"]["started"] == "at the second the tasks are due"
    assert result["systems"]["jobsched-cold"]["fire_seconds"]["first"] > 0.2
    assert result["machine"]["python_loop_seconds"] > 0
    goals = {row["goal"]: row for row in result["goals"]}
    assert goals["2. cold start: last call (s)"]["target"] == 6.0
    assert goals["3. warm burst: last call (s)"]["figure"] == result["systems"]["jobsched"]["fire_seconds"]["last"]
    assert goals["4. database server CPU per job (ms)"]["met"] is (
        result["systems"]["jobsched"]["cpu_ms_per_job"]["database_server"] <= 0.25
    )
    assert "issue #33 goals (figure, target):" in output
    if HAS_MATPLOTLIB:
        for png in ("system-fired-per-100ms.png", "system-lateness-cdf.png"):
            assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--systems", "sidekiq"), ("--systems", "sidekiq")),
        (("--rounds", "0"), ("--rounds",)),
        (("--base", "/nonexistent/checkout"), ("--base", "/nonexistent/checkout")),
    ],
)
def test_a_bad_option_is_refused_with_its_name(tmp_path, args, named):
    code, output = run_system(*args, "--out-dir", str(tmp_path))
    assert code == 2
    assert all(text in output for text in named), output


def test_the_stall_figures_find_the_longest_time_without_a_call_until_the_last_calls():
    # Due at 0: calls from 0.01; a 0.34 s hole after 0.21; the tail (the last 2 calls) is not judged.
    lateness = [0.01, 0.05, 0.12, 0.21, 0.55, 0.57, 0.61, 2.0, 3.0]
    stalls = stall_figures(lateness, tail=2)
    assert stalls["until_seconds"] == 0.61
    assert stalls["longest_gap_seconds"] == pytest.approx(0.34)
    assert stalls["longest_gap_after_seconds"] == 0.21
    assert stalls["gaps_over_100ms"] == 1
    assert stalls["empty_100ms_bins"] == 2  # 0.3-0.4 and 0.4-0.5
    # A late first call is a stall from the second on.
    assert stall_figures([0.4, 0.45, 0.5], tail=0)["longest_gap_seconds"] == 0.4


def test_each_goal_is_the_median_of_the_rounds_beside_its_target_and_the_base():
    def run(last: float, db: float) -> dict:
        return {"fire_seconds": {"last": last}, "cpu_ms_per_job": {"database_server": db}, "stalls": {}}

    rows = goals(
        {"jobsched": [run(3.0, 0.3), run(5.0, 0.2), run(4.0, 0.24)]},
        {"jobsched": [run(9.0, 0.5)]},
    )
    by_goal = {row["goal"]: row for row in rows}
    assert by_goal["3. warm burst: last call (s)"] == {
        "goal": "3. warm burst: last call (s)", "figure": 4.0, "target": 4.0, "met": True, "base": 9.0,
    }  # fmt: skip
    assert by_goal["4. database server CPU per job (ms)"]["figure"] == 0.24
    assert by_goal["4. database server CPU per job (ms)"]["met"] is True
    # Figures a run does not have (no cold start here, no stall figures) are left out, not shown as 0.
    assert not any(goal.startswith("2.") for goal in by_goal)
    assert "3. warm burst: longest time without a call until the last 500 (s)" not in by_goal
