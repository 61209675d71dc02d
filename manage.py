#!/usr/bin/env python
"""Django's command-line utility, with one readable line when the database is away.

In a plain shell (no DJANGO_SETTINGS_MODULE) it first reads the development `.env` that
`make run` writes (JOBSCHED_ENV_FILE names another), variables already set winning; a
command that names its settings (the tests', the benchmarks') never reads it.
"""

import gc
import os
import sys
from pathlib import Path

from jobsched_project.loops import loop_command


def main() -> None:
    if loop_command(sys.argv) is not None:
        # A loop's start builds objects it keeps for its whole life (modules, classes, settings):
        # collecting among them while it imports frees little and slows each start. The loop turns
        # the collector back on once they are frozen (workers.loop.settle_startup_objects).
        gc.disable()
    if "DJANGO_SETTINGS_MODULE" not in os.environ:
        env_file = Path(os.environ.get("JOBSCHED_ENV_FILE") or Path(__file__).resolve().parent / ".env")
        if env_file.is_file():
            import environ

            environ.Env.read_env(env_file)  # os.environ.setdefault: the shell's values win
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jobsched_project.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.db.utils import OperationalError  # before the try: its except clause names it

    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        sys.exit(f"jobsched: configuration error: {exc}")
    except OperationalError as exc:
        from database.reachability import describe_unreachable

        sys.exit(describe_unreachable(exc))


if __name__ == "__main__":
    main()
