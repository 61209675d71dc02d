"""The options every worker command shares, named the same way in all four.

`--idle-seconds` is the sleep after a step that found no work. `--once` runs until idle, then exits 0;
any error exits 1 with one line (workers/loop.py).
"""

from __future__ import annotations

from argparse import ArgumentParser, ArgumentTypeError

from django.conf import settings
from django.core.checks import Tags
from django.core.management.base import CommandError

from workers.health import HealthServer, Heartbeat, serve_health

# The system checks a loop runs at start: all but the URLconf's, the admin's and the templates'. A loop
# serves no URL and renders no template, and checking them imports every view and admin page, and
# every app's template tags (DRF's import its renderers, Markdown, YAML): a third of a loop's start,
# paid again by each process of a cold start. `migrate` still runs every check: the deployment's
# migrate Job, and each loop pod's `migrate --check` before it starts (deploy/k8s).
_NOT_A_LOOPS = {Tags.urls, Tags.admin, Tags.templates}
LOOP_CHECKS = sorted({getattr(Tags, name) for name in dir(Tags) if not name.startswith("_")} - _NOT_A_LOOPS)

ONCE_HELP = "step until a step finds no work, then exit 0; any error (the database's included) exits 1"


def add_loop_options(parser: ArgumentParser, *, idle_default: float, idle_help: str):
    parser.allow_abbrev = False  # the options' names as documented, never a prefix of one (`--idle`)
    parser.add_argument(
        "--idle-seconds",
        dest="idle_seconds",
        type=float,
        default=idle_default,
        help=f"{idle_help}; default %(default)s",
    )
    parser.add_argument("--once", action="store_true", help=ONCE_HELP)
    parser.add_argument(
        "--metrics-port",
        type=_port,
        default=None,
        help="serve /metrics (Prometheus) and /healthz (the loop's heartbeat) on this port, on"
        " WORKER_METRICS_HOST (default 127.0.0.1); default: off",
    )


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise ArgumentTypeError(f"must be a port number 1-65535, got {text!r}")
    return port


def start_health(name: str, options: dict) -> tuple[Heartbeat, HealthServer | None]:
    """The loop's heartbeat, served on --metrics-port when given.

    A loop sleeps up to --idle-seconds between iterations, so it is "stuck" only
    well past that, whatever WORKER_STUCK_SECONDS says.
    """
    stuck_after = max(settings.WORKER_STUCK_SECONDS, 3 * options["idle_seconds"])
    heartbeat = Heartbeat(name, stuck_after=stuck_after)
    return heartbeat, serve_health(heartbeat, options["metrics_port"])


def idle_seconds(options: dict) -> float:
    """The validated idle sleep: it must be positive (0 would spin on an idle database)."""
    value = options["idle_seconds"]
    if value <= 0:
        raise CommandError("--idle-seconds must be positive")
    return value
