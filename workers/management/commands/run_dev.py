"""Run the API and every worker loop as child processes, for `make run`.

Ctrl-C (or SIGTERM) stops the children with SIGTERM, waits for them, and exits.
If one child dies, the others are stopped too: a half-running stack misleads.
"""

import os
import signal
import subprocess
import sys
import time

from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand

WORKER_COMMANDS = ("run_scheduler", "run_executor", "run_reconciler", "run_archiver")
STOP_GRACE_SECONDS = 15


class Command(BaseCommand):
    help = "Start the API and the worker loops for development; stop them all on Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000", help="address the API listens on")
        parser.add_argument("--tenant", default="dev-tenant", help="tenant of the printed development token")

    def handle(self, *args, **options):
        available = get_commands()
        manage = [sys.executable, "manage.py"]
        commands = {"api": [*manage, "runserver", options["addr"], "--noreload"]}
        commands.update({name: [*manage, name] for name in WORKER_COMMANDS if name in available})

        stopping = False

        def request_stop(signum, frame):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)

        # Own process group per child: Ctrl-C reaches us only, and we stop them in order.
        children = {name: subprocess.Popen(cmd, start_new_session=True) for name, cmd in commands.items()}
        self.stdout.write(f"API: http://{options['addr']}/  (healthz, readyz, /v1/...)")
        self.stdout.write(f"processes: {', '.join(children)}")
        if "issue_token" in available:
            self.stdout.write(f"development token (tenant {options['tenant']}):")
            call_command("issue_token", tenant=options["tenant"], stdout=self.stdout)
        self.stdout.write("Ctrl-C stops everything.")

        exit_code = 0
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    self.stderr.write(f"{name} exited with {child.returncode}; stopping the rest")
                    exit_code = 1
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
