"""The benchmarks stay out of production: their commands exist only under bench.settings."""

from __future__ import annotations

import subprocess
import sys

from django.conf import settings
from django.core.management import get_commands

from tests.processes import child_env
from tests.workers.scheduler_processes import ROOT


def test_the_production_apps_hold_no_benchmark_command():
    assert "bench" not in settings.INSTALLED_APPS
    assert not {"bench_scheduler", "bench_executor"} & set(get_commands())


def test_bench_settings_add_the_bench_commands():
    listed = subprocess.run(
        [sys.executable, "manage.py", "help", "--commands"],
        cwd=ROOT,
        env=child_env(DJANGO_SETTINGS_MODULE="bench.settings"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert {"bench_scheduler", "bench_executor"} <= set(listed.stdout.split())
