"""UUIDv7 ids, stored as BINARY(16).

UUIDv7 is time-ordered, so inserts append to the clustered index and an id is a
pagination cursor. BINARY(16) is half of CHAR(32) and behaves the same on MySQL
8.0 and MariaDB (whose native UUID type MySQL lacks). Raw SQL passes `id.bytes`.
"""

from __future__ import annotations

import uuid

from django.db import models
from uuid_utils import compat


def new_id() -> uuid.UUID:
    """A fresh UUIDv7 (generated in Python by uuid-utils, monotonic within a process)."""
    return compat.uuid7()


def parse_id(value: object) -> uuid.UUID | None:
    """A UUID from a path or cursor segment, or None when it is not one."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return None


class BinaryUUIDField(models.Field):
    """A UUID stored in 16 bytes."""

    description = "UUID stored as BINARY(16)"
    empty_strings_allowed = False

    def db_type(self, connection) -> str:
        return "binary(16)"

    def get_internal_type(self) -> str:
        return "BinaryUUIDField"

    def from_db_value(self, value, expression, connection):
        return None if value is None else uuid.UUID(bytes=bytes(value))

    def to_python(self, value):
        if value is None or isinstance(value, uuid.UUID):
            return value
        if isinstance(value, (bytes, bytearray, memoryview)) and len(value) == 16:
            return uuid.UUID(bytes=bytes(value))
        parsed = parse_id(value)
        if parsed is None:
            from django.core.exceptions import ValidationError

            raise ValidationError("“%(value)s” is not a valid UUID.", code="invalid", params={"value": value})
        return parsed

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return None if value is None else self.to_python(value)

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)
        return None if value is None else value.bytes

    def value_to_string(self, obj) -> str:
        value = self.value_from_object(obj)
        return "" if value is None else str(value)

    def formfield(self, **kwargs):
        from django import forms

        return super().formfield(**{"form_class": forms.UUIDField, **kwargs})
