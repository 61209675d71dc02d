"""Fixtures for the job API tests: tenant-a's client and an in-memory history store in place of the real one."""

import pytest

from history.memory import InMemoryHistoryStore
from history.stores import set_history_store


@pytest.fixture
def store():
    """The process's history store for the test (inspectable; `fail_with` makes it raise)."""
    store = InMemoryHistoryStore()
    set_history_store(store)
    yield store
    set_history_store(None)


@pytest.fixture
def client(tenant_client):
    return tenant_client("tenant-a")
