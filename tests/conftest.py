"""Fixtures shared by every app's tests."""

import time

import jwt
import pytest
from django.conf import settings
from django.core.cache import caches
from rest_framework.test import APIClient

from history.memory import InMemoryHistoryStore
from history.stores import set_history_store


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Each test starts with empty per-tenant throttle counters (the test settings keep them in memory)."""
    caches["throttle"].clear()
    yield
    caches["throttle"].clear()


@pytest.fixture
def make_token():
    """Sign a JWT like a tenant's identity provider would: `make_token("tenant-a", ttl=60, **claims)`.

    `key`/`algorithm` override the signing key (e.g. a wrong one); a claim set to
    `None` is dropped from the payload (e.g. `make_token("a", exp=None)`).
    """

    def _make(tenant="tenant-a", *, ttl=3600, key=None, algorithm=None, headers=None, **claims):
        now = int(time.time())
        payload = {
            settings.JWT_TENANT_CLAIM: tenant,
            "aud": settings.JWT_AUDIENCE,
            "iat": now,
            "exp": now + ttl,
        }
        if settings.JWT_ISSUER:
            payload["iss"] = settings.JWT_ISSUER
        payload.update(claims)
        payload = {name: value for name, value in payload.items() if value is not None}
        signing_key = key if key is not None else (settings.JWT_SIGNING_KEY or settings.JWT_VERIFYING_KEY)
        return jwt.encode(payload, signing_key, algorithm=algorithm or settings.JWT_ALGORITHM, headers=headers)

    return _make


@pytest.fixture
def tenant_client(make_token):
    """`tenant_client("tenant-a")` → a DRF APIClient carrying a valid token for that tenant."""

    def _client(tenant="tenant-a"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(tenant)}")
        return client

    return _client


FAKE_DNS = {
    "example.com": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "api.example.org": ["93.184.216.34"],
    "internal.example.net": ["10.1.2.3"],
    "metadata.example.net": ["169.254.169.254"],
    "rebind.example.net": ["93.184.216.34", "127.0.0.1"],
}


@pytest.fixture
def fake_dns(monkeypatch):
    """Create-time DNS from FAKE_DNS (any other name does not resolve), so tests never touch real DNS."""
    import tasks.targets

    def resolve(host, port):
        try:
            return list(FAKE_DNS[host])
        except KeyError:
            raise OSError(f"{host} does not resolve") from None

    monkeypatch.setattr(tasks.targets, "resolver", resolve)
    return FAKE_DNS


@pytest.fixture
def store():
    """An in-memory history store in place of the configured one (inspectable; `fail_with` makes it raise)."""
    store = InMemoryHistoryStore()
    set_history_store(store)
    yield store
    set_history_store(None)
