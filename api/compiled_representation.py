"""DRF output serializers whose `to_representation` runs a per-field plan built once per serializer.

DRF's generic loop costs about 10 microseconds a field: a generic attribute walk,
and for each DateTimeField a look-up of the current time zone through asgiref's
context-local storage. A page of 50 tasks has some 1,300 fields: that was half of
the list's CPU (bench/api_profile.py). The plan keeps DRF's semantics field by
field (a None attribute renders None, a callable attribute or a missing one takes
DRF's own path) and only shortcuts what provably gives the same output:

- a plain attribute (`source` one name, `get_attribute` not overridden) is read
  with `operator.attrgetter`;
- CharField, IntegerField and UUIDField (hex_verbose) convert with `str`, `int`, `str`;
- an ISO 8601 DateTimeField without its own zone converts an aware value with the
  current zone read once per serializer, not once per value.

Every other field (method fields, nested serializers, choices, dicts) calls its own
`get_attribute` and `to_representation`. The first object a serializer renders takes DRF's
loop (a single task's answer would not repay the plan); the plan serves the rest of a page.
tests/test_compiled_representation.py checks the output equals DRF's generic loop.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.fields import Field, SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.settings import api_settings

from api.field_copies import copy_declared_fields

Getter = Callable[[Any], Any]
Converter = Callable[[Any], Any]


def _plain_getter(field: Field) -> Getter:
    """The field's attribute: `attrgetter` when that is what DRF's walk amounts to, else DRF's walk."""
    if type(field).get_attribute is not Field.get_attribute or field.source == "*" or len(field.source_attrs) != 1:
        return field.get_attribute
    read = attrgetter(field.source_attrs[0])
    slow = field.get_attribute

    def get(instance: Any) -> Any:
        try:
            value = read(instance)
        except AttributeError:
            return slow(instance)  # DRF's walk: Mappings, defaults, its own error text
        return slow(instance) if callable(value) else value  # DRF calls simple callables

    return get


def datetime_converter(field: serializers.DateTimeField) -> Converter:
    """The field's `to_representation`, with the current zone read now rather than once per value."""
    output_format = getattr(field, "format", api_settings.DATETIME_FORMAT)
    if output_format is None or output_format.lower() != ISO_8601 or hasattr(field, "timezone") or not settings.USE_TZ:
        return field.to_representation
    zone = timezone.get_current_timezone()  # what DateTimeField.default_timezone() reads for every value
    slow = field.to_representation

    def convert(value: Any) -> Any:
        if not isinstance(value, datetime.datetime) or value.tzinfo is None or value.utcoffset() is None:
            return slow(value)  # naive, a string, a falsy value: DRF's own path
        try:
            text = value.astimezone(zone).isoformat()
        except OverflowError:
            return slow(value)  # DRF turns it into its "overflow" error
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return convert


def _converter(field: Field) -> Converter:
    # Exact types only: a subclass may override to_representation.
    if type(field) is serializers.CharField:
        return str
    if type(field) is serializers.IntegerField:
        return int
    if type(field) is serializers.UUIDField and field.uuid_format == "hex_verbose":
        return str
    if type(field) is serializers.DateTimeField:
        return datetime_converter(field)
    return field.to_representation


# A Serializer whose output is DRF's, computed from a plan of (name, getter, converter) per field.
# No docstring on purpose: drf-spectacular would make it every subclass's schema description.
class CompiledRepresentation(serializers.Serializer):
    def get_fields(self) -> dict[str, Field]:
        # Every answer builds a new output serializer: its fields copied cheaply (api.field_copies).
        return copy_declared_fields(type(self))

    def _plan(self) -> list[tuple[str, Getter, Converter]]:
        plan = self.__dict__.get("_representation_plan")
        if plan is None:
            plan = [
                (
                    field.field_name,
                    _plain_getter(field)
                    if type(field) is not serializers.SerializerMethodField
                    else field.get_attribute,
                    _converter(field),
                )
                for field in self._readable_fields
            ]
            self.__dict__["_representation_plan"] = plan
        return plan

    def to_representation(self, instance: Any) -> dict[str, Any]:
        if "_representation_plan" not in self.__dict__ and not self.__dict__.get("_rendered_once"):
            # One object (a create's answer) costs less with DRF's loop than with building a plan.
            self.__dict__["_rendered_once"] = True
            return super().to_representation(instance)
        ret: dict[str, Any] = {}
        for name, get, convert in self._plan():
            try:
                attribute = get(instance)
            except SkipField:
                continue
            # As DRF: None renders None without calling the field; a related field's pk decides.
            check_for_none = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
            ret[name] = None if check_for_none is None else convert(attribute)
        return ret
