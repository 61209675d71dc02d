"""The rule every tenant API's input follows: a key the serializer does not know is a 400 naming it."""

from __future__ import annotations

import threading
from typing import Any

from rest_framework import serializers
from rest_framework.fields import Field

from api.field_copies import copy_declared_fields

# Each thread's idle instance of each input serializer class (StrictSerializer.validated).
_idle = threading.local()
# What one validation leaves on the instance; cleared before each call and after it.
_PER_CALL = ("initial_data", "_validated_data", "_errors", "_data")


def _clear(serializer: serializers.Serializer) -> None:
    for name in _PER_CALL:
        serializer.__dict__.pop(name, None)
    serializer._context = {}


class StrictSerializer(serializers.Serializer):
    """Refuse unknown keys by name (a "tenant_id" in the body included): a typo
    silently ignored would leave a task or a secret that is not what the tenant meant."""

    ignored_keys: frozenset[str] = frozenset()

    @classmethod
    def validated(cls, data: Any, *, context: dict[str, Any]) -> Any:
        """What `cls(data=data, context=context)` validates `data` to; raises its ValidationError.

        A request's fields are DRF's, built and bound anew for each instance, which cost a third of
        validating a task. DRF's validation keeps nothing of a call in a serializer or its bound
        fields except the input, the context and the results, all reset here, so each thread
        keeps one instance of each class and validates with it again. A validation started while
        the thread's instance is busy (one inside another) takes a new instance.
        """
        idle: dict[type[StrictSerializer], StrictSerializer] = _idle.__dict__.setdefault("serializers", {})
        serializer = idle.pop(cls, None) or cls()
        try:
            _clear(serializer)  # e.g. `_data`, which reading a raised error's serializer leaves
            serializer.initial_data = data
            serializer._context = context
            serializer.is_valid(raise_exception=True)
            return serializer.validated_data
        finally:
            _clear(serializer)
            idle[cls] = serializer

    def get_fields(self) -> dict[str, Field]:
        # Every request builds a new input serializer: its fields copied cheaply (api.field_copies).
        return copy_declared_fields(type(self))

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in self.fields and key not in self.ignored_keys)
            if unknown:
                raise serializers.ValidationError({key: ["unknown field"] for key in unknown})
        return super().to_internal_value(data)
