"""The real Cassandra node the suite runs against (`make test` starts it, see scripts/cassandra.sh).

CASSANDRA_HOSTS names it; without it the real-node tests skip with a reason, unless
CASSANDRA_REQUIRED=1 (CI): then they fail, so CI can never pass by skipping them.
Every test keyspace is throwaway (CASSANDRA_TEST_KEYSPACE, dropped at the end).
`stop_node`/`start_node` really stop and start the node the script started, for
the outage tests; they always leave it running for the tests after them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cassandra.sh"

CASSANDRA_HOSTS = [h for h in os.environ.get("CASSANDRA_HOSTS", "").split(",") if h]
REQUIRED = os.environ.get("CASSANDRA_REQUIRED", "") == "1"
TEST_KEYSPACE = os.environ.get("CASSANDRA_TEST_KEYSPACE", "jobsched_test")
LOCAL_REPLICATION = {"class": "SimpleStrategy", "replication_factor": 1}

needs_cassandra = pytest.mark.skipif(
    not CASSANDRA_HOSTS and not REQUIRED,
    reason="no Cassandra node: set CASSANDRA_HOSTS (make test starts one and sets it)",
)


LIB = ROOT / ".local" / "cassandra" / "lib"
needs_cassandra_jars = pytest.mark.skipif(
    not ((LIB / ".resolved").exists() and shutil.which("java")) and not REQUIRED,
    reason="no Cassandra jars or no java: `make cassandra` resolves them (scripts/cassandra.sh)",
)


def hosts() -> list[str]:
    """The contact points; with CASSANDRA_REQUIRED=1 and none given this fails instead of skipping."""
    if not CASSANDRA_HOSTS:
        pytest.fail("CASSANDRA_REQUIRED=1 but CASSANDRA_HOSTS is empty: start the node (scripts/cassandra.sh start)")
    return CASSANDRA_HOSTS


def _script(action: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), action], capture_output=True, text=True, timeout=300, check=False)


def node_is_ours() -> bool:
    """True when scripts/cassandra.sh started the node (so a test may stop it) and it answers."""
    result = _script("status")
    return result.returncode == 0 and "not started by this script" not in result.stdout


def stop_node() -> None:
    result = _script("stop")
    assert result.returncode == 0, result.stdout + result.stderr


def start_node() -> None:
    result = _script("start")
    assert result.returncode == 0, result.stdout + result.stderr
