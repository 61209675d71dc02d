"""`make run` as a developer meets it: its port, its development receiver, its stop.

The real Makefile's `run` target runs (its setup prerequisites marked done with `-o`: the test
database is migrated already), as a child of a real `make`, against the test database.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import urllib.request

import pytest
from django.conf import settings

from tests.processes import child_env, wait_until
from tests.serving import free_port, get

pytestmark = pytest.mark.django_db(transaction=True)


def _quickstart_check():
    """scripts/check_quickstart.py (a script, not a package): its process helpers serve these tests too."""
    spec = importlib.util.spec_from_file_location("check_quickstart", settings.BASE_DIR / "scripts/check_quickstart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_QUICKSTART = _quickstart_check()
_descendants = _QUICKSTART.descendants  # every live process below a pid (from /proc)
_alive = _QUICKSTART.alive  # those of the pids not gone (nor zombies)


def _post(url: str, body: dict | None, token: str) -> tuple[int, dict[str, str], bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Host": "127.0.0.1"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


@pytest.fixture
def make_run(tmp_path, make_token):
    api_port, receiver_port = free_port(), free_port()
    log = tmp_path / "make-run.log"
    env = child_env(ALLOWED_HOSTS="127.0.0.1,localhost")
    env.pop("DEBUG", None)
    env.pop("EGRESS_ALLOWLIST", None)
    with open(log, "w") as out:
        make = subprocess.Popen(
            ["make", "-o", "migrate", "-o", "dev-env", "run", f"API_PORT={api_port}", f"RECEIVER_PORT={receiver_port}"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield make, api_port, receiver_port, log
    finally:
        for pid in _alive(_descendants(make.pid)):
            os.kill(pid, signal.SIGKILL)
        if make.poll() is None:
            make.kill()
        make.wait(10)


def test_make_run_serves_api_port_and_a_receiver_that_gets_the_call(make_run, make_token):
    _, api_port, receiver_port, log = make_run
    base = f"http://127.0.0.1:{api_port}"
    # The introduction ends with "Ctrl-C stops everything", printed once the API and the receiver answer:
    # the API answers by then.
    wait_until(lambda: "Ctrl-C stops everything" in log.read_text(), timeout=90, what="make run's introduction")
    assert _answers(base), log.read_text()
    output = log.read_text()
    # The receiver is printed with a ready curl that names it.
    assert f"http://127.0.0.1:{receiver_port}" in output, output
    assert re.search(rf"curl .*{base}/v1/tasks", output), output
    token = make_token("dev-tenant")
    receiver = f"http://127.0.0.1:{receiver_port}/hello"
    body = {"name": "hello", "schedule": {"cron": "0 0 1 1 *"}, "http": {"url": receiver}}
    status, headers, _ = _post(f"{base}/v1/tasks", body, token)
    assert status == 201
    status, _, job = _post(f"{base}{headers['Location']}/run", None, token)
    assert status == 202
    job_id = json.loads(job)["id"]
    call = re.compile(rf"receiver: POST /hello job={job_id} attempt=1 .* -> 200")
    wait_until(lambda: call.search(log.read_text()), timeout=60, what="the call at the receiver")


def test_sigint_to_make_alone_stops_every_child(make_run):
    make, api_port, _, log = make_run
    wait_until(lambda: _answers(f"http://127.0.0.1:{api_port}"), timeout=90, what=f"the API; log:\n{log.read_text()}")
    children = _descendants(make.pid)
    assert len(children) >= 6  # run_dev, the API, four loops and the receiver
    make.send_signal(signal.SIGINT)  # to make's pid only, as a supervisor or `kill -INT` sends it
    wait_until(lambda: not _alive(children), timeout=40, what=f"every child stopped; log:\n{log.read_text()}")
    assert make.wait(10) != 0


def test_sigterm_to_make_alone_stops_every_child(make_run):
    make, api_port, _, log = make_run
    wait_until(lambda: _answers(f"http://127.0.0.1:{api_port}"), timeout=90, what=f"the API; log:\n{log.read_text()}")
    children = _descendants(make.pid)
    make.send_signal(signal.SIGTERM)
    wait_until(lambda: not _alive(children), timeout=40, what=f"every child stopped; log:\n{log.read_text()}")


def _answers(base: str) -> bool:
    try:
        return get(f"{base}/healthz", host="127.0.0.1")[0] == 200
    except OSError:
        return False
