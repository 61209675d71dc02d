"""The benches' own databases: one per bench, pointed at, raw connections to it, and the rows they fill it with.

Each bench runs on a dedicated database on the server Django uses (its name an
option, emptied by the bench), so a run never touches a developer's data.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from itertools import islice

import MySQLdb
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from domain.ids import new_id

INSERT_BATCH = 2000
JOB_COLUMNS = (
    "id, tenant_id, task_id, scheduled_at, status, priority, attempt, max_attempts, next_attempt_at,"
    " timeout_seconds, backoff_base_seconds, request_method, request_url, request_headers, request_body,"
    " updated_at"
)
JOB_ROW = "(%s, %s, %s, %s, 'pending', %s, 0, 3, %s, 10, 10, 'POST', %s, '{}', '', NOW(6))"
TASK_COLUMNS = (
    "id, tenant_id, name, http_url, http_method, http_headers, http_body, cron_expression, timezone, "
    "timeout_seconds, max_attempts, backoff_base_seconds, priority, status, version, next_run_at, "
    "created_at, updated_at"
)
TASK_ROW = "(%s, %s, %s, %s, 'POST', %s, %s, %s, %s, 30, 5, 10, 5, 'active', 1, %s, NOW(6), NOW(6))"


def use_database(name: str) -> None:
    """Point Django's default connection at `name`, created (utf8mb4) and migrated if missing.

    Child processes given `database_url_for()` afterwards see the same database.
    """
    connection.close()
    settings.DATABASES["default"]["NAME"] = connection.settings_dict["NAME"] = name
    call_command("ensure_database")
    call_command("migrate", verbosity=0, interactive=False)


def connect(name: str, *, read_committed: bool = False):
    """An autocommit connection to `name` on Django's server, in UTC: the bench's fixtures and progress polls."""
    db = settings.DATABASES["default"]
    return MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1",
        port=int(db["PORT"] or 3306),
        user=db["USER"],
        password=db["PASSWORD"] or "",
        database=name,
        charset="utf8mb4",
        binary_prefix=True,
        autocommit=True,
        init_command="SET time_zone='+00:00'" + (", tx_isolation='READ-COMMITTED'" if read_committed else ""),
    )


def db_now(cursor) -> datetime:
    """The database's clock (naive UTC), which every due time is set against."""
    cursor.execute("SELECT NOW(3)")
    return cursor.fetchone()[0]


def whole_second_after(now: datetime, seconds: float) -> datetime:
    """The first whole second at least `seconds` after `now` (both naive UTC): when a bench's burst is due."""
    return datetime.fromtimestamp(math.ceil(now.replace(tzinfo=UTC).timestamp() + seconds), UTC).replace(tzinfo=None)


def _chunks(rows: Iterable[tuple], size: int) -> Iterator[list[tuple]]:
    """`rows` in lists of `size` (the last one shorter): a million rows never sit in memory at once."""
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield chunk


def insert_jobs(cursor, rows: Iterable[tuple], *, url: str) -> list[bytes]:
    """Insert pending jobs given as (tenant, priority, due[, id]), in multi-row INSERTs; their ids in order."""
    ids: list[bytes] = []
    for chunk in _chunks(rows, INSERT_BATCH):
        params: list[object] = []
        for tenant, priority, due, *given in chunk:
            job_id = given[0] if given else new_id().bytes
            ids.append(job_id)
            params += [job_id, tenant, uuid.uuid4().bytes, due, priority, due, url]
        cursor.execute(f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES " + ", ".join([JOB_ROW] * len(chunk)), params)
    return ids


def insert_tasks(cursor, rows: Iterable[tuple], *, chunk: int = 5000) -> None:
    """Insert active tasks given as (tenant, name, url, headers, body, cron, zone, next_run_at), `chunk` a statement."""
    for part in _chunks(rows, chunk):
        params: list[object] = []
        for row in part:
            params += (new_id().bytes, *row)
        cursor.execute(f"INSERT INTO tasks ({TASK_COLUMNS}) VALUES {', '.join([TASK_ROW] * len(part))}", params)
