#!/usr/bin/env python
"""Django's command-line utility, with one readable line when the database is away.

In a plain shell (no DJANGO_SETTINGS_MODULE) it first reads the development `.env` that
`make run` writes (JOBSCHED_ENV_FILE names another), variables already set winning; a
command that names its settings (the tests', the benchmarks') never reads it.
"""

import os
import sys
from pathlib import Path


def main() -> None:
    if "DJANGO_SETTINGS_MODULE" not in os.environ:
        env_file = Path(os.environ.get("JOBSCHED_ENV_FILE") or Path(__file__).resolve().parent / ".env")
        if env_file.is_file():
            import environ

            environ.Env.read_env(env_file)  # os.environ.setdefault: the shell's values win
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jobsched_project.settings")
    from django.core.exceptions import ImproperlyConfigured

    try:
        from django.core.management import execute_from_command_line
        from django.db.utils import OperationalError

        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        sys.exit(f"jobsched: configuration error: {exc}")
    except OperationalError as exc:
        from database.reachability import describe_unreachable

        sys.exit(describe_unreachable(exc))


if __name__ == "__main__":
    main()
