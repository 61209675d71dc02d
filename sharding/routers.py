"""Which keyspace a migration's tables belong to, when DATABASE_URL is a Vitess target.

`manage.py migrate_vitess` migrates each keyspace target alone: the unsharded one
(`VITESS_GLOBAL_KEYSPACE`) gets Django's own tables, every shard of
`VITESS_TENANT_KEYSPACE` (targeted as `keyspace:shard`, so the shard behaves as a plain
database and keeps its own django_migrations) gets the tenant-scoped ones. A table is
tenant-scoped when its model has a `tenant_id` field: the vschema's one rule
(`sharding.vschema`).
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as global_apps
from django.conf import settings
from django.db import connections

# RunPython/RunSQL hints for an operation that writes Django's own tables (auth groups and
# permissions): without a model the router could not tell where it belongs.
GLOBAL_TABLES = {"vitess_keyspace": "global"}


def is_tenant_model(model: Any) -> bool:
    return any(field.name == "tenant_id" for field in model._meta.concrete_fields)


def keyspace_part(database_name: str) -> str:
    """'tenants' for a target in the tenant keyspace (`jobsched_tenants:-80`), else 'global'."""
    keyspace = database_name.split(":", 1)[0].split("@", 1)[0]
    return "tenants" if keyspace == settings.VITESS_TENANT_KEYSPACE else "global"


class KeyspaceRouter:
    """Allow each migration only on the keyspace its tables live in; routes nothing at run time."""

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        return allowed_on(keyspace_part(connections[db].settings_dict["NAME"]), app_label, model_name, **hints)


def allowed_on(part: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
    """Whether a migration operation belongs on `part` ('global' or 'tenants'); None: no opinion."""
    if hints.get("vitess_keyspace"):
        return hints["vitess_keyspace"] == part
    model = hints.get("model")
    if model is None and model_name is not None:
        try:
            model = global_apps.get_model(app_label, model_name)
        except LookupError:  # a model the migrations have since deleted: Django's own apps only
            return part == "global"
    if model is None:
        return None
    return is_tenant_model(model) == (part == "tenants")
