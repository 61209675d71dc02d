"""Tenant ids: one grammar, and columns that compare them byte for byte.

A tenant id is 1-64 of `A-Z a-z 0-9 - _ . : @`, checked where the token is
read (api.auth), so no space, control character, accent or other
look-alike ever reaches a query. Every `tenant_id` column is `TenantIdField`,
whose collation is binary and NO PAD: under the server's default collation
`'acme '`, `'ACME'` and `'acmé'` would all equal `'acme'`, and even
`utf8mb4_bin` pads (`'acme ' = 'acme'`). The NO PAD binary collation is
`utf8mb4_nopad_bin` on MariaDB and `utf8mb4_0900_bin` on MySQL 8.0, so the
field picks it per connection.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import models

MAX_TENANT_ID_LENGTH = 64
TENANT_ID_CHARACTERS = "A-Z a-z 0-9 - _ . : @"
_TENANT_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,64}", re.ASCII)

MARIADB_BINARY_COLLATION = "utf8mb4_nopad_bin"
MYSQL_BINARY_COLLATION = "utf8mb4_0900_bin"


def is_valid_tenant_id(value: object) -> bool:
    """Whether `value` is a tenant id of the one grammar (a str, 1-64 of the allowed characters)."""
    return isinstance(value, str) and _TENANT_ID.fullmatch(value) is not None


def binary_collation(connection: Any) -> str | None:
    """The utf8mb4 collation that compares byte for byte without padding, for this connection."""
    if connection.vendor != "mysql":
        return None
    return MARIADB_BINARY_COLLATION if connection.mysql_is_mariadb else MYSQL_BINARY_COLLATION


class ExactCharField(models.CharField):
    """A VARCHAR compared byte for byte without padding (binary NO PAD collation, per connection)."""

    def db_parameters(self, connection: Any) -> dict[str, Any]:
        params = super().db_parameters(connection)
        # Chosen per connection: the schema editor reads it on CREATE and on ALTER (the migration).
        params["collation"] = binary_collation(connection)
        return params


class TenantIdField(ExactCharField):
    """A tenant id column (VARCHAR(64)): no padded, case or accent variant of a tenant id matches it."""

    description = "tenant id, binary NO PAD collation"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_TENANT_ID_LENGTH)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if kwargs.get("max_length") == MAX_TENANT_ID_LENGTH:
            del kwargs["max_length"]
        return name, path, args, kwargs
