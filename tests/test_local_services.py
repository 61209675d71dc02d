"""The bare-machine scripts: scripts/os-packages.sh and the project-local MariaDB (scripts/mariadb.sh).

Each test runs the real script as a child process; the servers it starts live in a throwaway
directory on a free port and are stopped again, so the suite's own server is never touched.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import MySQLdb
import pytest
from django.conf import settings

SCRIPTS = Path(settings.BASE_DIR) / "scripts"
needs_server_binaries = pytest.mark.skipif(
    shutil.which("mariadbd") is None and not Path("/usr/sbin/mariadbd").exists(),
    reason="MariaDB's server binaries are not installed (scripts/os-packages.sh installs them)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_script(name: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPTS / name), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def local_dir():
    # A short path: the server's Unix socket lives here and socket paths are limited to 108 bytes.
    path = Path(tempfile.mkdtemp(prefix="jsdb"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def local_server(local_dir):
    """`(env, port)` for a project-local server in a throwaway folder; stopped after the test."""
    port = free_port()
    env = {"LOCAL_MARIADB_PORT": str(port), "LOCAL_MARIADB_DIR": str(local_dir / "mariadb")}
    yield env, port
    run_script("mariadb.sh", "stop", **env)


def answers_as_root(port: int) -> bool:
    try:
        conn = MySQLdb.connect(host="127.0.0.1", port=port, user="root", connect_timeout=3)
    except MySQLdb.OperationalError:
        return False
    with conn.cursor() as cursor:
        cursor.execute("SELECT 1")
        ok = cursor.fetchone() == (1,)
    conn.close()
    return ok


@needs_server_binaries
def test_start_is_idempotent_and_stop_stops_only_the_project_server(local_server):
    env, port = local_server
    first = run_script("mariadb.sh", "start", **env)
    assert first.returncode == 0, first.stderr
    assert "ready" in first.stdout
    assert answers_as_root(port)

    again = run_script("mariadb.sh", "start", **env)
    assert again.returncode == 0
    assert "already running" in again.stdout
    assert run_script("mariadb.sh", "status", **env).returncode == 0

    stopped = run_script("mariadb.sh", "stop", **env)
    assert "stopped" in stopped.stdout
    assert not answers_as_root(port)
    assert run_script("mariadb.sh", "status", **env).returncode == 3


@needs_server_binaries
def test_ensure_starts_the_project_server_when_the_default_url_finds_nothing(local_server):
    env, port = local_server
    result = run_script("mariadb.sh", "ensure", DATABASE_URL=f"mysql://root@127.0.0.1:{port}/jobsched", **env)
    assert result.returncode == 0, result.stderr
    assert answers_as_root(port)
    data = Path(env["LOCAL_MARIADB_DIR"]) / "data"
    assert (data / ".jobsched-initialised").exists()


@needs_server_binaries
def test_a_half_initialised_data_directory_is_rebuilt_not_reused(local_server):
    env, port = local_server
    data = Path(env["LOCAL_MARIADB_DIR"]) / "data"
    data.mkdir(parents=True)
    (data / "ibdata1").write_bytes(b"left by a killed mariadb-install-db")  # no completion marker

    result = run_script("mariadb.sh", "start", **env)
    assert result.returncode == 0, result.stderr
    assert "rebuilding" in result.stdout
    assert (data / ".jobsched-initialised").exists()
    assert answers_as_root(port)


def test_a_port_taken_by_something_else_names_the_port_and_the_setting(local_dir):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = run_script(
            "mariadb.sh", "start", LOCAL_MARIADB_PORT=str(port), LOCAL_MARIADB_DIR=str(local_dir / "mariadb")
        )
    assert result.returncode == 1
    assert f"port {port}" in result.stderr
    assert "LOCAL_MARIADB_PORT" in result.stderr
    assert not (local_dir / "mariadb" / "data").exists()


def test_a_server_that_already_answers_is_used_as_it_is_and_never_touched(local_dir):
    port = int(settings.DATABASES["default"]["PORT"] or 3306)  # the suite's own server
    env = {"LOCAL_MARIADB_PORT": str(port), "LOCAL_MARIADB_DIR": str(local_dir / "mariadb")}

    result = run_script("mariadb.sh", "ensure", DATABASE_URL=f"mysql://root@127.0.0.1:{port}/jobsched", **env)
    assert result.returncode == 0, result.stderr
    assert not (local_dir / "mariadb").exists()

    stop = run_script("mariadb.sh", "stop", **env)
    assert "not running" in stop.stdout
    assert answers_as_root(port)


def test_a_database_url_elsewhere_is_left_to_its_owner(local_dir):
    result = run_script(
        "mariadb.sh",
        "ensure",
        DATABASE_URL="mysql://app:pw@db.internal.invalid:3306/jobsched",
        LOCAL_MARIADB_PORT=str(free_port()),
        LOCAL_MARIADB_DIR=str(local_dir / "mariadb"),
    )
    assert result.returncode == 0
    assert not (local_dir / "mariadb").exists()


@pytest.mark.parametrize("value", ["abc", "0", "70000", "33o6"])
def test_a_bad_port_setting_is_one_line_naming_it(local_dir, value):
    result = run_script("mariadb.sh", "start", LOCAL_MARIADB_PORT=value, LOCAL_MARIADB_DIR=str(local_dir))
    assert result.returncode == 1
    assert result.stderr.startswith("mariadb: LOCAL_MARIADB_PORT:")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.django_db
def test_a_server_that_refuses_us_is_one_line_naming_the_url_with_the_password_masked():
    port = int(settings.DATABASES["default"]["PORT"] or 3306)
    result = subprocess.run(
        [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "ensure_database"],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": f"mysql://nobody:hunter2-secret@127.0.0.1:{port}/jobsched",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "DATABASE_URL" in lines[0]
    assert f"mysql://nobody:***@127.0.0.1:{port}/jobsched" in lines[0]
    assert "hunter2" not in result.stderr + result.stdout


def test_missing_packages_off_debian_root_print_the_install_command_and_stop(tmp_path):
    # A machine where nothing is installed and we are not root: the script must say what to run.
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "id").write_text("#!/bin/sh\necho 1000\n")
    (fake_bin / "id").chmod(0o755)
    result = subprocess.run(
        ["/bin/bash", str(SCRIPTS / "os-packages.sh"), "run"],
        env={"PATH": str(fake_bin)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert "jobsched needs, and this machine lacks:" in result.stderr
    if Path("/etc/debian_version").exists():
        assert "sudo apt-get install -y gcc pkg-config libmariadb-dev" in result.stderr


def test_os_packages_refuses_an_unknown_group():
    result = run_script("os-packages.sh", "everything")
    assert result.returncode == 2
    assert "usage" in result.stderr


def test_os_packages_passes_on_this_machine_once_installed():
    result = run_script("os-packages.sh", "test")
    assert result.returncode == 0, result.stderr
