"""Crontab to delivered call: apply a file, run a task now through the CLI, the real executor calls the receiver."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobsched_client import Client
from tests import server as live
from tests.cli import jobsched
from tests.server import Receiver


@pytest.fixture(scope="module")
def running_loops(base_url: str, server_env: dict[str, str], log_dir: Path) -> Iterator[None]:
    with live.loops(server_env, log_dir):
        yield
    for name in ("scheduler.log", "executor.log"):
        assert "Traceback" not in (log_dir / name).read_text(), (log_dir / name).read_text()


def test_a_crontab_task_run_now_reaches_the_receiver_and_shows_in_history(
    running_loops: None, cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    path = tmp_path / "e2e.cron"
    path.write_text(f"# jobsched: key=ping\n@daily curl -fsS -H 'X-Source: cron' -d 'hello' {receiver.url}/ping\n")
    assert jobsched("crontab", "apply", str(path), "--yes", env=cli_env).returncode == 0
    (task,) = api.tasks.list()
    job = json.loads(jobsched("-o", "json", "tasks", "run", task.id, env=cli_env).stdout)
    live.wait_until(lambda: api.jobs.get(job["id"]).status == "succeeded", timeout=60, what="the job succeeding")
    (call,) = receiver.requests
    assert (call["method"], call["path"], call["body"]) == ("POST", "/ping", "hello")
    assert call["headers"]["X-Source"] == "cron"
    assert call["headers"]["Idempotency-Key"] == job["id"]
    history = json.loads(jobsched("-o", "json", "history", task.id, env=cli_env).stdout)
    assert [(j["id"], j["status"], j["http_status"]) for j in history] == [(job["id"], "succeeded", 200)]
