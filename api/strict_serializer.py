"""The rule every tenant API's input follows: a key the serializer does not know is a 400 naming it."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.fields import Field

from api.field_copies import copy_declared_fields


class StrictSerializer(serializers.Serializer):
    """Refuse unknown keys by name (a "tenant_id" in the body included): a typo
    silently ignored would leave a task or a secret that is not what the tenant meant."""

    ignored_keys: frozenset[str] = frozenset()

    def get_fields(self) -> dict[str, Field]:
        # Every request builds a new input serializer: its fields copied cheaply (api.field_copies).
        return copy_declared_fields(type(self))

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in self.fields and key not in self.ignored_keys)
            if unknown:
                raise serializers.ValidationError({key: ["unknown field"] for key in unknown})
        return super().to_internal_value(data)
