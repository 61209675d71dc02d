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

from tests.cassandra_node import hosts, needs_cassandra, needs_cassandra_jars

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
    assert result.stdout.splitlines()[-1].startswith("mariadb: using the project's own server (pid ")
    again = run_script("mariadb.sh", "ensure", DATABASE_URL=f"mysql://root@127.0.0.1:{port}/jobsched", **env)
    assert again.stdout.splitlines() == [result.stdout.splitlines()[-1]]  # one line, naming the same server


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
    assert result.stdout.splitlines() == [
        f"mariadb: using the server already answering on 127.0.0.1:{port} (not the project's own)"
    ]

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
    assert result.stdout.splitlines() == [
        "mariadb: using DATABASE_URL's server at db.internal.invalid:3306 (not the project's own)"
    ]


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


# --- scripts/cassandra.sh: each checkout's node is a cluster of its own


def run_cassandra(action: str, node: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPTS / "cassandra.sh"), action],
        env={**os.environ, **node},
        capture_output=True,
        text=True,
        timeout=400,
    )


def node_view(port: int) -> tuple[str, list, list]:
    """(cluster name, system.peers, system.peers_v2) as the node on 127.0.0.1:`port` sees them."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy(["127.0.0.1"]))
    cluster = Cluster(["127.0.0.1"], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: profile}, connect_timeout=10)
    try:
        session = cluster.connect()
        (local,) = session.execute("SELECT cluster_name FROM system.local")
        peers = list(session.execute("SELECT peer FROM system.peers"))
        peers_v2 = list(session.execute("SELECT peer, peer_port FROM system.peers_v2"))
        return local.cluster_name, peers, peers_v2
    finally:
        cluster.shutdown()


@pytest.fixture
def two_nodes(tmp_path):
    """Two checkouts' nodes: their own data directories, free native and storage ports, a small heap."""
    nodes = [
        {
            "CASSANDRA_DIR": str(tmp_path / name),
            "CASSANDRA_PORT": str(free_port()),
            "CASSANDRA_STORAGE_PORT": str(free_port()),
            "CASSANDRA_HEAP_MB": "512",
            "CASSANDRA_START_TIMEOUT": "300",
        }
        for name in ("first", "second")
    ]
    yield nodes
    for node in nodes:
        run_cassandra("stop", node)


@pytest.mark.cassandra
@needs_cassandra_jars
def test_two_checkouts_nodes_each_see_only_themselves(two_nodes):
    first, second = two_nodes
    for node in (first, second):  # one after the other: the second starts while the first runs
        result = run_cassandra("start", node)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "cassandra: using the project's own node" in result.stdout
    views = [node_view(int(node["CASSANDRA_PORT"])) for node in (first, second)]
    (first_name, *first_peers), (second_name, *second_peers) = views
    assert first_name != second_name
    assert first_peers == [[], []]
    assert second_peers == [[], []]
    # A restart keeps the cluster name its data directory was created with (Cassandra refuses another).
    assert run_cassandra("stop", second).returncode == 0
    again = run_cassandra("start", second)
    assert again.returncode == 0, again.stdout + again.stderr
    assert node_view(int(second["CASSANDRA_PORT"]))[0] == second_name


@pytest.mark.cassandra
@needs_cassandra
def test_a_cql_server_already_answering_is_named_in_one_line_and_used_as_it_is(tmp_path):
    port = int(hosts()[0].rpartition(":")[2] or 9042)
    result = run_cassandra("start", {"CASSANDRA_DIR": str(tmp_path / "cassandra"), "CASSANDRA_PORT": str(port)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"cassandra: using the CQL server already answering on 127.0.0.1:{port}"
        f" (not the project's own node of {tmp_path / 'cassandra'})"
    ]
    assert not (tmp_path / "cassandra").exists()
