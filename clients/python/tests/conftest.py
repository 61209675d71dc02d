"""Fixtures: one live server per session, a fresh tenant (token) per test, a receiver on 127.0.0.1."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobsched_client import Client
from tests import server as live

TOKENS_PER_SESSION = 120


@pytest.fixture(scope="session")
def server_env() -> dict[str, str]:
    return live.server_env()


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-logs")


@pytest.fixture(scope="session")
def base_url(server_env: dict[str, str], log_dir: Path) -> Iterator[str]:
    with live.api_server(server_env, log_dir) as url:
        yield url


@pytest.fixture(scope="session")
def _tokens(server_env: dict[str, str]) -> Iterator[dict[str, str]]:
    run = uuid.uuid4().hex[:8]
    return iter(live.issue_tokens([f"sdk-{run}-{i}" for i in range(TOKENS_PER_SESSION)], env=server_env).items())


@pytest.fixture
def tenant(_tokens: Iterator[tuple[str, str]]) -> tuple[str, str]:
    """(tenant id, token) of a tenant no other test uses."""
    return next(_tokens)


@pytest.fixture
def token(tenant: tuple[str, str]) -> str:
    return tenant[1]


@pytest.fixture
def api(base_url: str, token: str) -> Iterator[Client]:
    with Client(base_url, token) as client:
        yield client


@pytest.fixture
def receiver() -> Iterator[live.Receiver]:
    with live.receiver() as state:
        yield state


@pytest.fixture
def cli_env(base_url: str, token: str, tmp_path: Path) -> dict[str, str]:
    """The environment for a `jobsched` child: this test's tenant, a config file of its own."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("JOBSCHED_")},
        "JOBSCHED_URL": base_url,
        "JOBSCHED_TOKEN": token,
        "JOBSCHED_CONFIG": str(tmp_path / "config.yaml"),
    }
