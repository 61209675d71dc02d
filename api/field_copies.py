"""A serializer instance's own copies of its declared fields: what DRF's deep copy gives, made cheaper.

DRF gives every serializer instance its own fields (`Serializer.get_fields`: a
`copy.deepcopy` of the declared ones), so binding them to it never touches another
instance's. Its deep copy re-runs each field's constructor on deep copies of its
arguments: for a task's create, the largest part of validating it.

A declared field is never bound (DRF only binds the copies), so for a field whose
constructor keeps nothing that anything changes in place afterwards, a shallow copy
holds what the constructor would build again (its validators' lazily formatted
messages are the one exception: they are formatted before the first copy): `bind` then assigns the copy's own
name, parent, label and source. That holds for the leaf fields listed below, when
the field's class adds no constructor, `bind` or copy of its own, and its default
and initial value are immutable (a list default must be the instance's own, as DRF
makes it). Any other field (a nested serializer, a field with a child, any other
type) takes DRF's deep copy. tests/test_field_copies.py checks every declared field of
the input serializers (`StrictSerializer`) against DRF's copy.
"""

from __future__ import annotations

import copy
import threading
import types
from collections.abc import Callable
from typing import Any

from rest_framework import serializers
from rest_framework.fields import Field, empty
from rest_framework.utils.formatting import lazy_format

# Leaf fields whose constructors store only values read afterwards: strings, numbers, validator
# lists, message and choice dicts, compiled formats. None holds another field.
SHALLOW_COPYABLE: tuple[type[Field], ...] = (
    serializers.BooleanField,
    serializers.CharField,
    serializers.ChoiceField,
    serializers.DateTimeField,
    serializers.FloatField,
    serializers.IntegerField,
    serializers.JSONField,
    serializers.SerializerMethodField,
    serializers.UUIDField,
)
_IMMUTABLE = (type(None), bool, int, float, str, type, types.FunctionType, types.BuiltinFunctionType)


def _immutable(value: Any) -> bool:
    # A class or a function as a default (e.g. `default=dict`) is called for each value.
    return value is empty or isinstance(value, _IMMUTABLE)


# What would make copy.copy do more than copy the instance's __dict__ (see _shallow_copy).
_COPY_PROTOCOL = ("__slots__", "__copy__", "__getstate__", "__setstate__", "__reduce__", "__reduce_ex__")


def _copies_as_its_dict(kind: type) -> bool:
    return not any(name in vars(cls) for cls in kind.__mro__[:-1] for name in _COPY_PROTOCOL)


def shallow_copy_is_exact(field: Field) -> bool:
    """Whether a shallow copy of the unbound `field` holds what DRF's deep copy would build."""
    kind = type(field)
    base = next((listed for listed in SHALLOW_COPYABLE if isinstance(field, listed)), None)
    return (
        base is not None
        and kind.__init__ is base.__init__
        and kind.bind is base.bind
        and kind.__deepcopy__ is Field.__deepcopy__
        and kind.__new__ is Field.__new__
        and _copies_as_its_dict(kind)
        and field.parent is None
        and _immutable(field.default)
        and _immutable(field.initial)
    )


def _shallow_copy(field: Field) -> Field:
    # What copy.copy does for a field of a class without its own copy protocol (a new object of
    # its class holding the same attributes), without copy's generic look-ups.
    twin = object.__new__(type(field))
    twin.__dict__.update(field.__dict__)
    return twin


def _format_messages(field: Field) -> None:
    """Format the field's validators' messages now, before copies share them.

    DRF's bound validators carry a `lazy_format` message that formats itself on its first
    `str()` and then clears its inputs, which is not safe from two threads at once; with the
    messages formatted once here, copies only ever read them. The same text as formatting per
    request: the project does not translate (USE_I18N is off).
    """
    for validator in field.__dict__.get("_validators", ()):
        message = getattr(validator, "message", None)
        if isinstance(message, lazy_format):
            str(message)


_building = threading.Lock()
Copiers = list[tuple[str, Field, Callable[[Field], Field]]]
_copiers_by_class: dict[type[serializers.Serializer], Copiers] = {}


def _copiers(serializer_class: type[serializers.Serializer]) -> Copiers:
    copiers: Copiers = []
    for name, field in serializer_class._declared_fields.items():
        if shallow_copy_is_exact(field):
            _format_messages(field)
            copiers.append((name, field, _shallow_copy))
        else:
            copiers.append((name, field, copy.deepcopy))
    return copiers


def copy_declared_fields(serializer_class: type[serializers.Serializer]) -> dict[str, Field]:
    """The fields for one new instance of `serializer_class`: each its own object, as DRF's `get_fields` returns.

    Which copy each declared field takes is decided once per class (declared fields never change),
    by one thread: deciding formats the shared fields' messages.
    """
    copiers = _copiers_by_class.get(serializer_class)
    if copiers is None:
        with _building:
            copiers = _copiers_by_class.get(serializer_class)
            if copiers is None:
                copiers = _copiers_by_class[serializer_class] = _copiers(serializer_class)
    return {name: copier(field) for name, field, copier in copiers}
