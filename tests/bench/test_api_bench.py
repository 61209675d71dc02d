"""bench.api's verdicts beside the targets, and bench.api_profile's table by component."""

from __future__ import annotations

import pytest

from bench.api import TARGET_P99_MS, TARGET_SPEEDUP, extra_speedups, verdicts
from bench.api_pair import paired_summary
from bench.api_profile import breakdown, component_of, table


def _run(create_rate: float, create_p99: float, list_rate: float, list_p99: float) -> dict:
    return {
        "create": {"requests_per_second": create_rate, "p99_ms": create_p99},
        "list_limit_50": {"requests_per_second": list_rate, "p99_ms": list_p99},
    }


def test_verdicts_compare_the_median_run_with_four_times_the_base_and_60_ms():
    runs = [_run(410.0, 55.0, 300.0, 90.0), _run(390.0, 59.0, 310.0, 80.0), _run(420.0, 70.0, 320.0, 85.0)]

    summary = verdicts(runs, {"create": 100.0, "list_limit_50": 100.0})

    assert (TARGET_SPEEDUP, TARGET_P99_MS) == (4.0, 60.0)
    assert summary["create"]["requests_per_second"] == 410.0
    assert summary["create"]["speedup"] == 4.1
    assert summary["create"]["rate_met"] is True
    assert summary["create"]["p99_ms"] == 59.0
    assert summary["create"]["p99_met"] is True
    assert summary["list_limit_50"]["target_requests_per_second"] == 400.0
    assert summary["list_limit_50"]["rate_met"] is False
    assert summary["list_limit_50"]["p99_met"] is False


def test_an_extra_phase_is_compared_with_the_base_without_a_target_and_left_out_where_the_base_lacks_it():
    runs = [{"get_one": {"requests_per_second": r, "p99_ms": p}} for r, p in ((900.0, 20.0), (1000.0, 30.0))]
    base_runs = [{"get_one": {"requests_per_second": r, "p99_ms": p}} for r, p in ((400.0, 50.0), (500.0, 70.0))]

    summary = extra_speedups(runs, base_runs)

    assert summary == {
        "get_one": {
            "requests_per_second": 950.0,
            "base_requests_per_second": 450.0,
            "speedup": 2.11,
            "p99_ms": 25.0,
            "base_p99_ms": 60.0,
        }
    }
    assert extra_speedups(runs, [{}]) == {}


def test_a_sample_counts_for_its_innermost_component():
    view = "process 1;WSGIHandler.__call__ (django/core/handlers/wsgi.py:1);ProbeMiddleware.__call__ (api/probes.py:5)"
    logged = f"{view};task_create (tasks/services.py:140);Logger.info (logging/__init__.py:1489)"
    locked = (
        f"{view};task_create (tasks/services.py:128);lock_tenants (tasks/limits.py:52);execute (MySQLdb/cursors.py:1)"
    )

    assert component_of(logged) == "logging (access log, app log lines)"
    assert component_of(locked) == "active-task limit (tenant lock, count)"
    assert component_of(f"{view};route_of (api/access_log.py:40)") == "logging (access log, app log lines)"
    assert component_of("process 1:x;Thread.run (threading.py:982)") == "other"
    samples = breakdown([f"{logged} 3", f"{locked} 1", "garbage"])
    assert samples == {"logging (access log, app log lines)": 3, "active-task limit (tenant lock, count)": 1}
    rendered = table(samples, cpu_ms_per_request=8.0)
    assert "| logging (access log, app log lines) | 75% | 6.00 |" in rendered
    assert "| **all (gunicorn workers)** | 100% | **8.00** |" in rendered


def test_a_paired_comparison_takes_the_median_of_the_rounds_ratios():
    def run(rate: float, p99: float, non_2xx: int = 0) -> dict:
        return {
            "requests_per_second": rate,
            "p99_ms": p99,
            "worker_cpu_ms_per_request": 1000 / rate,
            "database_cpu_ms_per_request": 0.5,
            "non_2xx": non_2xx,
        }

    # The machine slows in round 2: both sides do, and that round's ratio still counts as any other.
    ours = [run(600.0, 30.0), run(300.0, 50.0), run(660.0, 28.0, non_2xx=1)]
    base = [run(500.0, 40.0), run(250.0, 70.0), run(600.0, 35.0)]

    summary = paired_summary(ours, base)

    assert summary["ratios"] == [1.2, 1.2, 1.1] and summary["median_ratio"] == 1.2
    assert summary["this"]["requests_per_second"] == 600.0 and summary["base"]["requests_per_second"] == 500.0
    assert summary["this"]["p99_ms"] == 30.0 and summary["base"]["p99_ms"] == 40.0
    assert (summary["this"]["non_2xx"], summary["base"]["non_2xx"]) == (1, 0)
    with pytest.raises(ValueError):
        paired_summary(ours, base[:2])  # a round without its pair
