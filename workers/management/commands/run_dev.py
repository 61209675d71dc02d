"""Run the API, every worker loop and (in DEBUG) the development receiver, for `make run`.

Ctrl-C (or SIGTERM) stops the children with SIGTERM, waits for them, and exits.
If one child dies, the others are stopped too: a half-running stack misleads.
A SIGINT sent to `make` alone reaches nobody else: make waits for its children inside its
handler without telling them (GNU make forwards SIGTERM only), so this command watches its
parent too (see `parent_stopping`).
"""

import io
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand

WORKER_COMMANDS = ("run_scheduler", "run_executor", "run_reconciler", "run_archiver")
STOP_GRACE_SECONDS = 15
_FATAL_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def parent_stopping(parent: int) -> bool:
    """True when our parent is gone, or is make handling a fatal signal.

    make blocks the signal it handles while it waits for its children in the handler; the
    blocked mask in /proc is the one trace of it (Linux; elsewhere only a gone parent counts).
    """
    if os.getppid() != parent:
        return True
    try:
        if Path(f"/proc/{parent}/comm").read_text().strip() not in {"make", "gmake"}:
            return False
        status = Path(f"/proc/{parent}/status").read_text()
    except OSError:
        return False
    blocked = next((line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), "0")
    mask = int(blocked, 16)
    return any(mask & (1 << (signum - 1)) for signum in _FATAL_SIGNALS)


READY_TIMEOUT_SECONDS = 90


def wait_for_listeners(addresses: list[str], children: dict, *, timeout: float, stopped) -> None:
    """Until each `host:port` accepts a connection, a child exits, a stop is asked, or `timeout` passes."""
    deadline = time.monotonic() + timeout
    waiting = list(addresses)
    while waiting and time.monotonic() < deadline and not stopped():
        if any(child.poll() is not None for child in children.values()):
            return  # the loop below reports it and stops the rest
        host, _, port = waiting[0].rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            waiting.pop(0)
        except OSError:
            time.sleep(0.2)


def with_receiver(allowlist: str, receiver: str) -> str:
    """EGRESS_ALLOWLIST with the receiver's entry added (once)."""
    entries = [entry.strip() for entry in allowlist.split(",") if entry.strip()]
    return ",".join(entries if receiver in entries else [*entries, receiver])


class Command(BaseCommand):
    help = "Start the API, the worker loops and (DEBUG) the development receiver; stop them all on Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address the API listens on")
        parser.add_argument("--tenant", default="dev-tenant", help="tenant of the printed development token")
        parser.add_argument(
            "--receiver-port",
            type=int,
            default=9911,
            help="port of the development receiver on 127.0.0.1, allowlisted for tasks (DEBUG only; 0: none)",
        )

    def handle(self, *args, **options):
        available = get_commands()
        manage = [sys.executable, "manage.py"]
        commands = {"api": [*manage, "runserver", options["addr"], "--noreload"]}
        commands.update({name: [*manage, name] for name in WORKER_COMMANDS if name in available})
        env = dict(os.environ)
        receiver = None
        if settings.DEBUG and options["receiver_port"]:
            receiver = f"127.0.0.1:{options['receiver_port']}"
            commands["receiver"] = [*manage, "run_dev_receiver", "--port", str(options["receiver_port"])]
            env["EGRESS_ALLOWLIST"] = with_receiver(env.get("EGRESS_ALLOWLIST", ""), receiver)

        stopping = False

        def request_stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
        parent = os.getppid()

        # Own process group per child: Ctrl-C reaches us only, and we stop them in order.
        children = {name: subprocess.Popen(cmd, start_new_session=True, env=env) for name, cmd in commands.items()}
        # The lines below end with "Ctrl-C stops everything": a reader (or a script) takes them to
        # mean ready, so the API and the receiver must answer first (runserver takes seconds).
        listening = [options["addr"]] + ([receiver] if receiver else [])
        wait_for_listeners(listening, children, timeout=READY_TIMEOUT_SECONDS, stopped=lambda: stopping)
        self._introduce(options, list(children), receiver, "issue_token" in available)

        exit_code = 0
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"{name} exited with {child.returncode}; stopping the rest")
                    exit_code = 1
                    stopping = True
            if parent_stopping(parent):
                self.stdout.write("make was told to stop; stopping everything")
                stopping = True
            time.sleep(0.2)

        for child in children.values():
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        self.stdout.write("stopped")
        sys.exit(exit_code)

    def _introduce(self, options, names: list[str], receiver: str | None, can_issue: bool) -> None:
        base = f"http://{options['addr']}"
        self.stdout.write(f"API: {base}/  (schema {base}/v1/schema, docs {base}/v1/docs, admin {base}/admin/)")
        self.stdout.write(f"processes: {', '.join(names)}")
        if not can_issue:
            return
        self.stdout.write(f"development token (tenant {options['tenant']}):")
        out = io.StringIO()
        call_command("issue_token", tenant=options["tenant"], stdout=out)
        token = out.getvalue().strip()
        self.stdout.write(token)
        if receiver:
            body = (
                '{"name": "hello", "schedule": {"cron": "*/5 * * * *"}, '
                f'"http": {{"url": "http://{receiver}/hello"}}}}'
            )
            curl = (
                f"curl -i -X POST {base}/v1/tasks -H {shlex.quote('Authorization: Bearer ' + token)} "
                f"-H 'Content-Type: application/json' -d {shlex.quote(body)}"
            )
            self.stdout.write(
                f"development receiver: http://{receiver}/ (allowed by EGRESS_ALLOWLIST; each call it gets "
                f"is printed here). A task that calls it every five minutes:\n{curl}"
            )
        self.stdout.write("Ctrl-C stops everything.")
