"""Fixtures for the job API tests (the in-memory `store` is in tests/conftest.py)."""

import pytest


@pytest.fixture
def client(tenant_client):
    return tenant_client("tenant-a")
