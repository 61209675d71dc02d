"""The benchmarks stay out of production: their commands exist only under bench.settings."""

from __future__ import annotations

from django.conf import settings
from django.core.management import get_commands

from tests.bench.runs import run_bench_command


def test_the_production_apps_hold_no_benchmark_command():
    assert "bench" not in settings.INSTALLED_APPS
    assert not {"bench_scheduler", "bench_executor"} & set(get_commands())


def test_bench_settings_add_the_bench_commands():
    listed = run_bench_command("help", "--commands", timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert {"bench_scheduler", "bench_executor"} <= set(listed.stdout.split())
