"""`make run`'s development server closes each request's connection (one thread per request)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.processes import child_env, start_manage, wait_until
from tests.serving import free_port, get

pytestmark = pytest.mark.django_db(transaction=True)


def _connections_to(database: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s AND ID <> CONNECTION_ID()", [database]
        )
        return cursor.fetchone()[0]


def test_forty_sequential_requests_leave_no_connections_behind(make_token, tmp_path):
    database = connection.settings_dict["NAME"]
    port = free_port()
    # DB_CONN_MAX_AGE as production has it: runserver must not keep one connection per thread anyway.
    env = child_env(DEBUG="1", DB_CONN_MAX_AGE="60", ALLOWED_HOSTS="127.0.0.1")
    server = start_manage("runserver", f"127.0.0.1:{port}", "--noreload", env=env, log_path=tmp_path / "api.log")
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {make_token('tenant-a')}"}
    try:
        wait_until(lambda: _answers(base), timeout=60, what="runserver answering")
        before = _connections_to(database)
        statuses = {get(f"{base}/v1/tasks", host="127.0.0.1", headers=auth)[0] for _ in range(40)}
        assert statuses == {200}
        wait_until(lambda: _connections_to(database) <= before, timeout=5, what="connections closed")
        assert _connections_to(database) <= before
    finally:
        server.terminate()
        server.wait(timeout=30)


def _answers(base: str) -> bool:
    try:
        return get(f"{base}/healthz", host="127.0.0.1")[0] == 200
    except OSError:
        return False
