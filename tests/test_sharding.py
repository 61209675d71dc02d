"""Where each migration goes when the queue is sharded on Vitess (sharding.routers); no cluster needed.

The cluster's own tests are tests/vitess (`make test-vitess`).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from jobs.models import Job
from sharding.routers import GLOBAL_TABLES, allowed_on, keyspace_part
from sharding.vschema import tables


@pytest.mark.parametrize(
    ("name", "part"),
    [
        ("jobsched_tenants:-80", "tenants"),
        ("jobsched_tenants:80-@primary", "tenants"),
        ("jobsched_tenants", "tenants"),
        ("jobsched", "global"),
        ("@primary", "global"),
    ],
)
def test_a_target_belongs_to_the_tenant_keyspace_or_the_global_one(name, part):
    assert keyspace_part(name) == part


def test_a_model_with_a_tenant_id_migrates_on_the_shards_only():
    assert allowed_on("tenants", "jobs", model=Job) is True
    assert allowed_on("global", "jobs", model=Job) is False
    assert allowed_on("tenants", "jobs", "job") is True


def test_djangos_own_models_migrate_on_the_unsharded_keyspace_only():
    assert allowed_on("global", "auth", model=User) is True
    assert allowed_on("tenants", "auth", "user") is False


def test_an_operation_on_djangos_tables_says_so_by_its_hint():
    assert allowed_on("global", "jobs", **GLOBAL_TABLES) is True
    assert allowed_on("tenants", "jobs", **GLOBAL_TABLES) is False


def test_an_operation_without_a_model_or_hint_is_left_to_django():
    assert allowed_on("tenants", "jobs") is None


def test_every_tenant_scoped_table_is_sharded_and_djangos_are_not():
    global_tables, tenant_tables = tables()
    assert tenant_tables == [
        "calendar_spans", "calendars", "job_history", "jobs", "notification_events", "notification_subscriptions",
        "origin_buckets", "rate_limits", "run_requests", "signing_secrets", "task_calendars", "task_changes",
        "task_labels", "tasks", "tenant_limits", "tenant_secrets",
    ]  # fmt: skip
    assert {"auth_user", "django_session", "django_migrations"} <= set(global_tables)
