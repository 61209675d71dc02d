"""Fixtures shared by every app's tests."""

import gc
import logging
import threading
import time

import jwt
import pytest
from django.conf import settings
from django.core.cache import caches
from rest_framework.test import APIClient

from history.memory import InMemoryHistoryStore
from history.stores import set_history_store
from tests.tenants import OTHER_TENANT, OWNER, TenantClient

# What asyncio logs (through its exception handler) when a task or resource was left behind:
# a loop closed or collected with work still pending. Each is a test or shutdown that did not clean up.
ASYNCIO_LEAK_MESSAGES = ("Task was destroyed but it is pending", "Task exception was never retrieved", "Unclosed")


class _AsyncioLeaks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(ASYNCIO_LEAK_MESSAGES):
            self.messages.append(message.splitlines()[0] + " " + " ".join(message.splitlines()[1:2]))


_asyncio_leaks = _AsyncioLeaks()
logging.getLogger("asyncio").addHandler(_asyncio_leaks)


def _take_asyncio_leaks() -> list[str]:
    leaks, _asyncio_leaks.messages[:] = list(_asyncio_leaks.messages), []
    return leaks


@pytest.fixture(autouse=True)
def _no_asyncio_leaks():
    """Fail a test during which asyncio reported a leaked task (left by it, or by one just before it)."""
    _take_asyncio_leaks()
    yield
    leaks = _take_asyncio_leaks()
    if leaks:
        pytest.fail("asyncio reported leaks:\n" + "\n".join(leaks), pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    """Leaks collected after the last test (a loop still alive at the end) fail the run too."""
    gc.collect()
    leaks = _take_asyncio_leaks()
    # A test server whose loop outlives the session has its pending tasks destroyed at exit.
    leaks += [
        f"{t.name} still running" for t in threading.enumerate() if t.name.startswith(("Receiver-", "ConnectionTrap-"))
    ]
    if leaks:
        session.config.get_terminal_writer().line("asyncio reported leaks after the tests:\n" + "\n".join(leaks))
        session.exitstatus = 1


@pytest.fixture(autouse=True)
def _fresh_throttle_counts():
    """Each test starts with empty per-tenant throttle counters (the test settings keep them in memory)."""
    caches["throttle"].clear()
    caches["anonymous_throttle"].clear()
    yield
    caches["throttle"].clear()
    caches["anonymous_throttle"].clear()


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
    """`tenant_client("tenant-a")` → a TenantClient (a DRF APIClient) carrying a valid token for that tenant."""

    def _client(tenant=OWNER):
        return TenantClient(tenant, make_token(tenant))

    return _client


@pytest.fixture
def owner(tenant_client) -> TenantClient:
    """The tenant whose tasks and jobs a test makes and reads (tests/tenants.py)."""
    return tenant_client(OWNER)


@pytest.fixture
def other_tenant(tenant_client) -> TenantClient:
    """Another tenant, with a valid token and rows of its own: the owner's are a 404 to it."""
    return tenant_client(OTHER_TENANT)


@pytest.fixture
def stranger() -> APIClient:
    """A caller with no token at all: every tenant endpoint is a 401 to it."""
    return APIClient()


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
    from outbound.egress import NameNotFound

    def resolve(host, port):
        try:
            return list(FAKE_DNS[host])
        except KeyError:
            raise NameNotFound(f"{host} does not resolve") from None  # NXDOMAIN, not a lookup that failed

    monkeypatch.setattr(tasks.targets, "resolver", resolve)
    return FAKE_DNS


@pytest.fixture
def store():
    """An in-memory history store in place of the configured one (inspectable; `fail_with` makes it raise)."""
    store = InMemoryHistoryStore()
    set_history_store(store)
    yield store
    set_history_store(None)


@pytest.fixture(scope="session")
def cassandra_session():
    """A driver session on the real node, in the throwaway keyspace (history tables, TTL 1 h), dropped at the end."""
    from history.cassandra_store import connect, schema_statements
    from tests.cassandra_node import LOCAL_REPLICATION, TEST_KEYSPACE, hosts

    session = connect(hosts=hosts(), keyspace=None)
    session.execute(f"DROP KEYSPACE IF EXISTS {TEST_KEYSPACE}")  # a run killed before its teardown
    for statement in schema_statements(keyspace=TEST_KEYSPACE, ttl_seconds=3600, replication=LOCAL_REPLICATION):
        session.execute(statement)
    session.set_keyspace(TEST_KEYSPACE)
    yield session
    session.execute(f"DROP KEYSPACE IF EXISTS {TEST_KEYSPACE}")
    session.cluster.shutdown()
