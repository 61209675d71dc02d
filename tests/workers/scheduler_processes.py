"""Start real `manage.py run_scheduler` processes on the test database and read their tick logs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from database.reachability import database_url_for

ROOT = Path(__file__).resolve().parents[2]
_FIELD = re.compile(r"(\w+)=('[^']*'|\S+)")


def start_scheduler(*options: str, url: str | None = None) -> subprocess.Popen:
    """`manage.py run_scheduler *options` on the test database (or `url`), logging at INFO."""
    env = {
        **os.environ,
        "DATABASE_URL": url or database_url_for(),
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "LOG_LEVEL": "INFO",
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "run_scheduler", *options],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tick_records(log: str) -> list[dict[str, str]]:
    """The key=value fields of each `event=tick` line."""
    return [dict(_FIELD.findall(line)) for line in log.splitlines() if " event=tick " in line]
