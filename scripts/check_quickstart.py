"""Run the README's quickstart verbatim against a real `make run`, and account for every README command.

    python3 scripts/check_quickstart.py [--api-port N] [--receiver-port N] [--docs-port N]

1. Every command in README.md's ```sh blocks is either run here or named in COVERED_ELSEWHERE
   with the script that runs it; a command added to the README and checked nowhere fails.
2. The quickstart's first block (`make run`) starts, on free ports unless given (the ports are
   appended as make variables, so the block itself is run as written), and must print its
   "Ctrl-C stops everything." line; DATABASE_URL from the environment is passed on.
3. The second block runs as written in one `bash -euo pipefail`, in the checkout, without
   DJANGO_SETTINGS_MODULE (a developer's second terminal); its output must show the task's job
   succeeded with HTTP 200, and `make run`'s output the receiver's line for that call.
4. SIGINT to `make` alone must stop every process it started within 40 s.
5. `make docs` must serve the site (the README's other documentation command is built by
   .ci/docs.sh with --strict).

Prints one line per step with its duration, and `N passed, N failed` at the end; exits 1 when
a step failed. Standard library only (it runs before the virtualenv exists).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# README commands run by another script: (command, the script that runs it).
COVERED_ELSEWHERE = {
    "make test": ".ci/run (the suite)",
    "make docs-build": ".ci/docs.sh (mkdocs build --strict)",
}
READY_LINE = "Ctrl-C stops everything."
MAKE_RUN_TIMEOUT = 900  # a fresh clone installs the virtualenv first


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def sh_blocks(markdown: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", markdown, flags=re.S)


def commands(block: str) -> list[str]:
    """The block's commands: comment lines and trailing `# ...` comments left out."""
    found = []
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found.append(re.sub(r"\s+#\s.*$", "", line).strip())
    return found


def quickstart_blocks(readme: str) -> list[str]:
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = sh_blocks(section)
    if len(blocks) != 2:
        raise SystemExit(f"README's Quickstart: expected 2 sh blocks (make run; the rest), found {len(blocks)}")
    return blocks


def descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    live = set()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                live.add(pid)
        except OSError:
            pass
    return live


class Checker:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.started = time.monotonic()

    def result(self, ok: bool, what: str, detail: str = "") -> bool:
        took = time.monotonic() - self.started
        print(
            f"quickstart: {'ok  ' if ok else 'FAIL'} {what} ({took:.1f} s since start){': ' + detail if detail else ''}"
        )
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def check_docs_serve(check: Checker, port: int) -> None:
    log_path = Path(tempfile.mkstemp(prefix="make-docs-", suffix=".log")[1])
    with open(log_path, "w") as log:  # the child keeps its own copy of the descriptor
        make = subprocess.Popen(
            ["make", "docs", f"DOCS_PORT={port}"],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def serves() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                return response.status == 200 and b"jobsched" in response.read()
        except OSError:
            return False

    try:
        check.result(wait_for(serves, 300), f"make docs serves the site on 127.0.0.1:{port}", str(log_path))
    finally:
        os.killpg(make.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
        try:
            make.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-port", type=int, default=0)
    parser.add_argument("--receiver-port", type=int, default=0)
    parser.add_argument("--docs-port", type=int, default=0)
    parser.add_argument("--skip-docs", action="store_true", help="leave out step 5")
    args = parser.parse_args()
    api_port = args.api_port or free_port()
    receiver_port = args.receiver_port or free_port()
    readme = (ROOT / "README.md").read_text()
    check = Checker()

    first, second = quickstart_blocks(readme)
    quickstart = set(commands(first)) | set(commands(second))
    serve_docs = {"make docs"}
    every = [command for block in sh_blocks(readme) for command in commands(block)]
    unchecked = [c for c in every if c not in quickstart and c not in COVERED_ELSEWHERE and c not in serve_docs]
    check.result(not unchecked, f"every README command is checked ({len(every)})", ", ".join(unchecked))

    start = commands(first)
    if start != ["make run"]:
        check.result(False, "the quickstart's first block is `make run`", repr(start))
        return 1
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG"}}
    log_path = Path(tempfile.mkstemp(prefix="make-run-", suffix=".log")[1])
    with open(log_path, "w") as log:
        make = subprocess.Popen(
            [*shlex.split(start[0]), f"API_PORT={api_port}", f"RECEIVER_PORT={receiver_port}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        ready = wait_for(lambda: READY_LINE in log_path.read_text() or make.poll() is not None, MAKE_RUN_TIMEOUT)
        ready = ready and make.poll() is None
        if not check.result(ready, f"make run is ready (API 127.0.0.1:{api_port})", f"log {log_path}"):
            print(log_path.read_text()[-4000:])
            return 1
        terminal = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", second],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        output = terminal.stdout
        check.result(terminal.returncode == 0, "the second terminal's commands ran", terminal.stderr[-2000:])
        history_ok = '"status":"succeeded"' in output.replace(" ", "") and '"http_status":200' in output.replace(
            " ", ""
        )
        check.result(history_ok, "the history shows the job succeeded with HTTP 200", output[-1500:])
        call = re.search(r"receiver: POST /hello job=\S+ attempt=1 .* -> 200", log_path.read_text())
        check.result(call is not None, "make run printed the call at the receiver")
    finally:
        children = descendants(make.pid)
        if make.poll() is None:
            make.send_signal(signal.SIGINT)  # to make alone, not a terminal's group
        stopped = wait_for(lambda: make.poll() is not None and not alive(children), 40)
        check.result(stopped, f"SIGINT to make stopped it and its {len(children)} processes")
        for pid in alive(children):
            os.kill(pid, signal.SIGKILL)
        if make.poll() is None:
            make.kill()
            make.wait()
    if not args.skip_docs:
        check_docs_serve(check, args.docs_port or free_port())
    print(f"{check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
