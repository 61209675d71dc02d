"""The vschema, derived from the models: one rule, a table with `tenant_id` is sharded by it.

services/vitess/schema/<keyspace>/vschema.json (what scripts/vitess.sh hands vttestserver) is
this, written out; tests/vitess/test_vschema.py keeps the two equal.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings

from sharding.routers import is_tenant_model

VINDEX = "tenant"  # xxhash of tenant_id: a varchar key needs a hash vindex of its bytes


def tables() -> tuple[list[str], list[str]]:
    """(global tables, tenant tables), sorted; Django's cache table counts as global."""
    global_tables: set[str] = set()
    tenant_tables: set[str] = set()
    for model in apps.get_models(include_auto_created=True):
        if model._meta.proxy or not model._meta.managed:
            continue
        (tenant_tables if is_tenant_model(model) else global_tables).add(model._meta.db_table)
    global_tables.add("django_migrations")
    global_tables.update(
        cache["LOCATION"] for cache in settings.CACHES.values() if cache["BACKEND"].endswith("DatabaseCache")
    )
    global_tables.add("jobsched_throttle")  # the production throttle cache (THROTTLE_CACHE_URL's default)
    return sorted(global_tables), sorted(tenant_tables)


def vschemas() -> dict[str, dict[str, Any]]:
    """Each keyspace's vschema, as vtctldclient ApplyVSchema and vttestserver take it."""
    global_tables, tenant_tables = tables()
    return {
        settings.VITESS_GLOBAL_KEYSPACE: {"sharded": False, "tables": {table: {} for table in global_tables}},
        settings.VITESS_TENANT_KEYSPACE: {
            "sharded": True,
            "vindexes": {VINDEX: {"type": "xxhash"}},
            "tables": {
                table: {"column_vindexes": [{"column": "tenant_id", "name": VINDEX}]} for table in tenant_tables
            },
        },
    }


def missing_statements(cursor) -> list[str]:
    """The ALTER VSCHEMA statements that bring vtgate's vschema up to `vschemas()` (none when it is)."""
    statements: list[str] = []
    for keyspace, wanted in vschemas().items():
        cursor.execute(f"USE `{keyspace}`")
        cursor.execute("SHOW VSCHEMA TABLES")
        have_tables = {row[0] for row in cursor.fetchall()}
        if wanted["sharded"]:
            cursor.execute("SHOW VSCHEMA VINDEXES")
            if VINDEX not in {row[1] for row in cursor.fetchall()}:  # (keyspace, name, type, ...)
                statements.append(f"ALTER VSCHEMA CREATE VINDEX `{keyspace}`.`{VINDEX}` USING xxhash")
        for table in wanted["tables"]:
            if table in have_tables:
                continue
            if wanted["sharded"]:
                statements.append(f"ALTER VSCHEMA ON `{keyspace}`.`{table}` ADD VINDEX `{VINDEX}`(`tenant_id`)")
            else:
                statements.append(f"ALTER VSCHEMA ADD TABLE `{keyspace}`.`{table}`")
    return statements
