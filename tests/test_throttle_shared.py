"""The tenant throttle counts in the database cache, so every process and pod shares one budget."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from tests.serving import get, gunicorn, production_env

pytestmark = pytest.mark.django_db(transaction=True)

TABLE = "jobsched_throttle_shared_test"


@pytest.fixture
def cache_table():
    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": TABLE}}
    ):
        call_command("createcachetable", verbosity=0)
    yield f"dbcache://{TABLE}"
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")


def test_two_api_processes_share_one_tenant_budget(cache_table, make_token, tmp_path):
    env = production_env(THROTTLE_CACHE_URL=cache_table, TENANT_THROTTLE_RATE="4/minute")
    auth = {"Authorization": f"Bearer {make_token('tenant-throttled')}"}
    other = {"Authorization": f"Bearer {make_token('tenant-other')}"}
    with gunicorn(env, tmp_path / "a.log") as a, gunicorn(env, tmp_path / "b.log") as b:
        answers = [get(f"{base}/v1/tasks", headers=auth)[0] for base in (a, b, a, b, a, b)]
        assert answers == [200, 200, 200, 200, 429, 429]
        assert get(f"{b}/v1/tasks", headers=other)[0] == 200  # another tenant's budget is its own


def test_two_api_processes_share_one_anonymous_budget_per_address_when_told_to(cache_table, tmp_path):
    env = production_env(ANONYMOUS_THROTTLE_CACHE_URL=cache_table, ANONYMOUS_THROTTLE_RATE="4/minute")
    with gunicorn(env, tmp_path / "a.log") as a, gunicorn(env, tmp_path / "b.log") as b:
        answers = [get(f"{base}/v1/tasks")[0] for base in (a, b, a, b, a, b)]
        assert answers == [401, 401, 401, 401, 429, 429]


def test_by_default_the_anonymous_budget_never_touches_the_database(tmp_path):
    """Per process: a flood without a token writes nothing to MySQL (no throttle table is even needed)."""
    env = production_env(ANONYMOUS_THROTTLE_RATE="4/minute", THROTTLE_CACHE_URL="dbcache://no_such_table_here")
    with gunicorn(env, tmp_path / "a.log") as a:
        assert [get(f"{a}/v1/tasks")[0] for _ in range(6)] == [401, 401, 401, 401, 429, 429]
