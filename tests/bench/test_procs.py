"""The benches' view of processes: the database server they measure is the one they talk to."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from bench.procs import cpu_seconds, database_server_pid


@pytest.mark.django_db
def test_the_measured_database_server_is_the_one_behind_the_connection():
    # Several local servers may run at once (one per developer): the one measured must be ours.
    with connection.cursor() as cursor:
        pid = database_server_pid(cursor)
        cursor.execute("SELECT @@pid_file, @@datadir")
        pid_file, datadir = cursor.fetchone()
    assert pid == int(Path(pid_file).read_text().strip())
    assert Path(f"/proc/{pid}/comm").read_text().strip() in {"mariadbd", "mysqld"}
    assert f"--datadir={datadir.rstrip('/')}" in Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ") or (
        Path(f"/proc/{pid}/cwd").resolve() == Path(datadir).resolve()
    )
    assert cpu_seconds(pid) > 0
