"""Start real `manage.py run_scheduler` processes on the test database and read their tick logs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
_FIELD = re.compile(r"(\w+)=('[^']*'|\S+)")


def database_url() -> str:
    """DATABASE_URL of the database this test runs on (test_..., not the configured one)."""
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"mysql://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 3306}/{db['NAME']}"


def start_scheduler(*options: str, url: str | None = None) -> subprocess.Popen:
    """`manage.py run_scheduler *options` on the test database (or `url`), logging at INFO."""
    env = {
        **os.environ,
        "DATABASE_URL": url or database_url(),
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
