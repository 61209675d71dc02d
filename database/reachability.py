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


def database_url_for(name: str | None = None) -> str:
    """A DATABASE_URL for the connection in use (or another database on the same server).

    Child processes (benches, end-to-end tests) get the database the parent is
    really on, e.g. test_jobsched, rather than the one DATABASE_URL names.
    """
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"mysql://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 3306}/{name or db['NAME']}"


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
