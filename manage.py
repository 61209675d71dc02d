#!/usr/bin/env python
"""Django's command-line utility, with one readable line when the database is away."""

import os
import sys


def main() -> None:
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
