"""A bench run from a test: the real command line in a child process, to its end, its output captured."""

from __future__ import annotations

import subprocess

from tests.processes import child_env, run_manage, run_python


def run_bench(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python <args>` (`-m bench.<name> ...`), on the test database unless `env` says otherwise."""
    return run_python(*args, env=env or child_env(), timeout=timeout)


def run_bench_command(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`manage.py <args>` under bench.settings, the only settings that install the bench commands."""
    return run_manage(*args, env=child_env(DJANGO_SETTINGS_MODULE="bench.settings"), timeout=timeout)
