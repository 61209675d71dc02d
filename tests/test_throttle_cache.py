"""The throttles' database cache (api/throttle_cache.py): one upsert per write, Django's reads, a bounded table.

The budget shared by several gunicorn processes is tests/test_throttle_shared.py's.
"""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from tests.test_settings import PRODUCTION_LIKE, _printed

pytestmark = pytest.mark.django_db(transaction=True)

TABLE = "jobsched_throttle_cache_test"


def _caches(**options: object) -> dict[str, dict[str, object]]:
    throttle = {"BACKEND": "api.throttle_cache.UpsertDatabaseCache", "LOCATION": TABLE, "OPTIONS": options}
    return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}, "throttle": throttle}


@pytest.fixture
def cache_table():
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": TABLE}}
    ):
        call_command("createcachetable", verbosity=0)
    yield
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")


def _rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {TABLE}")
        return cursor.fetchone()[0]


def test_a_dbcache_url_gets_the_upsert_backend_for_both_throttles():
    env = {
        **PRODUCTION_LIKE,
        "THROTTLE_CACHE_URL": "dbcache://jobsched_throttle",
        "ANONYMOUS_THROTTLE_CACHE_URL": "dbcache://jobsched_throttle",
    }
    both = "settings.CACHES['throttle']['BACKEND'], settings.CACHES['anonymous_throttle']['BACKEND']"
    printed = _printed(both, env)
    assert printed == "api.throttle_cache.UpsertDatabaseCache api.throttle_cache.UpsertDatabaseCache"
    redis = {**PRODUCTION_LIKE, "THROTTLE_CACHE_URL": "redis://127.0.0.1:6379/0"}
    assert _printed("settings.CACHES['throttle']['BACKEND']", redis) == "django.core.cache.backends.redis.RedisCache"


def test_a_throttled_request_reads_its_history_once_and_writes_it_in_one_statement(cache_table, tenant_client):
    client = tenant_client("tenant-a")
    with override_settings(CACHES=_caches(CULL_EVERY=1000), TENANT_THROTTLE_RATE="100/minute"):
        assert client.get("/v1/tasks").status_code == 200  # the first write (an insert) culls
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/v1/tasks").status_code == 200

    on_cache = [query["sql"] for query in queries.captured_queries if TABLE in query["sql"]]
    assert len(on_cache) == 2, on_cache
    assert on_cache[0].startswith("SELECT") and "ON DUPLICATE KEY UPDATE" in on_cache[1]
    assert not [query["sql"] for query in queries.captured_queries if query["sql"].startswith(("BEGIN", "SAVEPOINT"))]


def test_the_budget_still_runs_out_and_another_tenant_keeps_its_own(cache_table, tenant_client):
    with override_settings(CACHES=_caches(), TENANT_THROTTLE_RATE="3/minute"):
        answers = [tenant_client("tenant-a").get("/v1/tasks").status_code for _ in range(5)]
        assert answers == [200, 200, 200, 429, 429]
        assert tenant_client("tenant-b").get("/v1/tasks").status_code == 200


def test_set_overwrites_get_reads_back_and_an_expired_value_is_gone(cache_table):
    with override_settings(CACHES=_caches()):
        cache = caches["throttle"]
        cache.set("k", [1.5, 2.5], 60)
        cache.set("k", [3.5], 60)
        cache.set("gone", "x", -1)
        assert cache.get("k") == [3.5]
        assert cache.get("gone") is None
        assert cache.get("missing", "default") == "default"


def test_the_table_stays_bounded_by_max_entries(cache_table):
    with override_settings(CACHES=_caches(MAX_ENTRIES=4, CULL_FREQUENCY=2, CULL_EVERY=1)):
        cache = caches["throttle"]
        for n in range(20):
            cache.set(f"tenant-{n}", [n], 60)
        assert _rows() <= 5  # as Django's: culled whenever a write finds more than MAX_ENTRIES


@pytest.mark.filterwarnings("ignore::django.core.cache.backends.base.CacheKeyWarning")  # the over-long key
def test_a_write_the_database_refuses_is_dropped_as_djangos_and_the_callers_transaction_goes_on(cache_table):
    """Django's set swallows a DatabaseError of its write (a request is served uncounted, never a 500)."""
    with override_settings(CACHES=_caches()):
        cache = caches["throttle"]
        too_long = "k" * 300  # the key column is varchar(255): strict mode refuses it
        cache.set(too_long, [1.0], 60)
        with transaction.atomic():
            cache.set("kept", [2.0], 60)
            cache.set(too_long, [1.0], 60)
            assert cache.get("kept") == [2.0]  # the transaction is still usable
        assert cache.get("kept") == [2.0]
