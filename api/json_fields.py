"""Input fields that take a JSON value only in the type the schema names.

DRF's CharField reads `0` as "0" and its IntegerField reads "30" as 30: a body the
tenant did not write, and a request the OpenAPI schema says is invalid answered
as valid (schemathesis's negative cases found `"http": {"body": 0}` stored as "0").
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class JsonStringField(serializers.CharField):
    """A JSON string, never a number or a boolean turned into one."""

    default_error_messages = {**serializers.CharField.default_error_messages, "invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class JsonIntegerField(serializers.IntegerField):
    """A JSON integer (`30`, or `30.0`, which JSON Schema counts as one), never a string or a boolean."""

    default_error_messages = {**serializers.IntegerField.default_error_messages, "invalid": "Must be an integer."}

    def to_internal_value(self, data: Any) -> int:
        integral = isinstance(data, int) or (isinstance(data, float) and data.is_integer())
        if isinstance(data, bool) or not integral:
            self.fail("invalid")
        return super().to_internal_value(int(data))


class JsonBooleanField(serializers.BooleanField):
    """A JSON boolean, never "true", 1 or "yes" (DRF's BooleanField reads all of them)."""

    default_error_messages = {**serializers.BooleanField.default_error_messages, "invalid": "Must be a boolean."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data
