"""Database reachability, said in one line that names DATABASE_URL."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connection
from django.db.utils import Error as DatabaseError


def redacted_database_url() -> str:
    """DATABASE_URL without its password, safe for logs and error lines."""
    parts = urlsplit(settings.DATABASE_URL)
    if parts.password:
        netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


def describe_unreachable(exc: BaseException) -> str:
    reason = exc.args[1] if len(exc.args) > 1 else exc
    return f"jobsched: cannot reach the database at {redacted_database_url()} (DATABASE_URL): {reason}"


def database_answers() -> bool:
    """True when a trivial query round-trips; used by /readyz."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        connection.close()
        return False
