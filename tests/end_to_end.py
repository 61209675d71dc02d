"""The whole product for the end-to-end tests: one-shot tasks through the API, the four loops as real processes."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from tests.processes import start_manage, stop_processes

# Each loop's options: short sleeps, so a test waits seconds, not minutes.
LOOPS = {
    "scheduler": ("run_scheduler", "--idle-seconds", "0.2"),
    "executor": ("run_executor", "--idle-seconds", "1", "--grace", "5"),
    "reconciler": ("run_reconciler", "--idle-seconds", "1"),
    "archiver": ("run_archiver", "--idle-seconds", "0.5"),
}


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def one_shot(client, name: str, url: str, run_at: datetime, *, headers: dict[str, str] | None = None, **fields):
    """Create a one-shot task through the API (201 asserted); its JSON."""
    body = {
        "name": name,
        "schedule": {"run_at": iso(run_at)},
        "http": {"url": url, "method": "POST", "headers": headers or {}, "body": "hello"},
        **fields,
    }
    response = client.post("/v1/tasks", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


@contextlib.contextmanager
def every_loop(env: dict[str, str], log_dir: Path) -> Iterator[dict[str, subprocess.Popen]]:
    """The four loops as real processes (logs `<log_dir>/<loop>.log`) for the block.

    After it they are stopped, and each must exit 0 with no traceback in its log.
    """
    loops = {name: start_manage(*command, env=env, log_path=log_dir / f"{name}.log") for name, command in LOOPS.items()}
    try:
        yield loops
    finally:
        exits = dict(zip(loops, stop_processes(*loops.values()), strict=True))
    logs = {name: (log_dir / f"{name}.log").read_text() for name in loops}
    assert exits == dict.fromkeys(loops, 0), logs
    assert all("Traceback" not in text for text in logs.values()), logs
