"""The sharded queue on the real local Vitess cluster (make test-vitess; docs/scaling.md).

DATABASE_URL is vtgate (`/@primary`: no default keyspace, every table routed by the vschema)
and DATABASE_VITESS=1, set by `make test-vitess` before Django starts; `manage.py
migrate_vitess` has run. The tests use that database as it is, not a test_ copy (a vtgate
target cannot be created): each session first empties the tenant-scoped tables on every shard,
and each test the rows the one before it left.
A missing cluster fails the session: these tests are never skipped.
"""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from django.db import connection

from sharding import vschema
from sharding.targets import shard_targets, target_url


def pytest_ignore_collect(collection_path, config):
    """Collected by `make test-vitess` only: `make test` runs on one MariaDB, where these cannot run.

    Never a skip: `make test-vitess` without the cluster's settings collects nothing, and pytest
    fails (exit 5).
    """
    return None if settings.DATABASE_VITESS else True


@pytest.fixture(scope="session", autouse=True)
def vitess_database(django_db_blocker):
    if not settings.DATABASE_VITESS:
        pytest.fail("tests/vitess need DATABASE_VITESS=1 and DATABASE_URL at vtgate: run `make test-vitess`")
    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@version")
            assert cursor.fetchone()[0].endswith("-Vitess"), "DATABASE_URL does not lead to vtgate"
            for table in vschema.tables()[1]:
                # DDL on every shard: a DELETE is refused past 10,000 rows of a shard (a bench's leftovers).
                cursor.execute(f"TRUNCATE TABLE `{table}`")
        yield
        connection.close()


@pytest.fixture(autouse=True)
def empty_tenant_tables(vitess_database):
    """Each test starts with no tenant rows: another test's due jobs would be fired by its loops."""
    with connection.cursor() as cursor:
        for table in vschema.tables()[1]:
            cursor.execute(f"DELETE FROM `{table}`")


def shard_of(tenant_id: str) -> str:
    """The shard holding `tenant_id`'s rows, as vtgate's xxhash vindex maps it."""
    with connection.cursor() as cursor:
        cursor.execute(f"USE `{settings.VITESS_TENANT_KEYSPACE}`")
        try:
            cursor.execute(f"SELECT shard FROM `{vschema.VINDEX}` WHERE id = %s", [tenant_id])
            shard = cursor.fetchone()[0]
            return shard.decode() if isinstance(shard, bytes) else shard  # vtgate answers it as varbinary
        finally:
            cursor.execute("USE `@primary`")


@pytest.fixture(scope="session")
def tenants_by_shard() -> dict[str, list[str]]:
    """Two fresh tenant ids on each shard: {"-80": [...], "80-": [...]}."""
    found: dict[str, list[str]] = {shard: [] for shard in settings.VITESS_SHARDS}
    while any(len(ids) < 2 for ids in found.values()):
        tenant = f"tenant-{uuid.uuid4().hex[:10]}"
        shard = shard_of(tenant)
        if len(found[shard]) < 2:
            found[shard].append(tenant)
    return found


@pytest.fixture(scope="session")
def shard_urls() -> dict[str, str]:
    """Each shard's DATABASE_URL for its loop set: vtgate targeting `keyspace:shard`."""
    return {target.split(":", 1)[1]: target_url(target) for target in shard_targets()}
