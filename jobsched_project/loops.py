"""The four loops' command names, and which one this process runs: read by manage.py before Django
starts (the collector's pause) and by the settings (what a loop's start skips). No Django here."""

from __future__ import annotations

from collections.abc import Sequence

LOOP_COMMANDS = ("run_scheduler", "run_executor", "run_reconciler", "run_archiver")


def loop_command(argv: Sequence[str]) -> str | None:
    """The loop `manage.py` was asked to run (argv as `sys.argv`), or None for any other command."""
    return argv[1] if len(argv) > 1 and argv[1] in LOOP_COMMANDS else None
