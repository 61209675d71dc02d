"""Run the installed `jobsched` command as a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

JOBSCHED = str(Path(sys.executable).parent / "jobsched")


def jobsched(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # stdin is a pipe (never the terminal): the command sees a non-interactive run, as in CI or cron.
    return subprocess.run([JOBSCHED, *args], env=env, input=stdin or "", capture_output=True, text=True, timeout=120)
