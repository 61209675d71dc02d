"""Serializer instances get fields equal to DRF's deep copies of the declared ones, each their own."""

from __future__ import annotations

import copy
import importlib
import threading
from typing import Any

import pytest
from rest_framework import serializers
from rest_framework.utils.formatting import lazy_format

from api.field_copies import copy_declared_fields, shallow_copy_is_exact
from api.json_fields import JsonIntegerField, JsonStringField
from api.strict_serializer import StrictSerializer
from tasks.serializers import HttpInput, ScheduleInput, TaskInput

# Every module declaring a serializer on the cheap copies, so each of their fields is checked below.
SERIALIZER_MODULES = (
    "jobs.backfill_views",
    "notifications.views",
    "ratelimits.views",
    "signing.views",
    "tasks.calendars.serializers",
    "tasks.serializers",
    "vault.views",
)


def _subclasses(base: type) -> list[type]:
    found = []
    for kind in base.__subclasses__():
        if kind.__module__.startswith("tests."):
            continue
        found += [kind, *_subclasses(kind)]
    return found


def _project_serializers() -> list[type[serializers.Serializer]]:
    for name in SERIALIZER_MODULES:
        importlib.import_module(name)
    return sorted(_subclasses(StrictSerializer), key=lambda kind: kind.__qualname__)


def _comparable(value: Any) -> Any:
    """`value` as compared between two copies: a field by what it holds, a validator by its limit and message."""
    if isinstance(value, serializers.Field):
        return type(value), _state(value)
    if isinstance(value, list | tuple):
        return [_comparable(item) for item in value]
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    if type(value).__module__.startswith(("django.core.validators", "rest_framework.validators")):
        # DRF's max_length message is a lazy_format, which has no __eq__: compared as its text.
        return type(value), getattr(value, "limit_value", None), str(getattr(value, "message", ""))
    return value


def _state(field: serializers.Field) -> dict[str, Any]:
    """A bound field's attributes, less those that differ between any two copies by design."""
    state = dict(vars(field))
    state.pop("_creation_counter")  # DRF's constructor numbers every field it builds
    state.pop("parent")  # each copy is bound to its own serializer
    return {name: _comparable(value) for name, value in state.items()}


@pytest.mark.parametrize("serializer_class", _project_serializers(), ids=lambda kind: kind.__qualname__)
def test_every_declared_field_copy_holds_what_drfs_copy_holds(serializer_class: type[serializers.Serializer]) -> None:
    ours = copy_declared_fields(serializer_class)
    drfs = copy.deepcopy(serializer_class._declared_fields)

    assert list(ours) == list(drfs)
    for name, field in ours.items():
        field.bind(name, serializer_class())
        drfs[name].bind(name, serializer_class())
        assert type(field) is type(drfs[name])
        assert _state(field) == _state(drfs[name]), name


def test_the_task_apis_leaf_fields_take_the_shallow_copy() -> None:
    # The reason for the module: a test that the rule still covers the fields of a create.
    for serializer_class in (TaskInput, ScheduleInput, HttpInput):
        for name, field in serializer_class._declared_fields.items():
            if name not in {"schedule", "http"}:
                assert shallow_copy_is_exact(field), f"{serializer_class.__name__}.{name}"


def test_each_serializer_instance_has_fields_of_its_own() -> None:
    first, second = TaskInput(data={}), TaskInput(data={})

    for name in TaskInput._declared_fields:
        assert first.fields[name] is not second.fields[name]
        assert first.fields[name].parent is first and second.fields[name].parent is second
        assert TaskInput._declared_fields[name].parent is None  # the declared field stays unbound
    assert first.fields["http"].fields["url"] is not second.fields["http"].fields["url"]


def test_a_changed_field_of_one_instance_leaves_the_others_alone() -> None:
    changed = TaskInput()
    changed.fields["name"].label = "changed"

    assert TaskInput().fields["name"].label == "Name"


def test_a_mutable_default_is_each_instances_own() -> None:
    class WithList(StrictSerializer):
        tags = serializers.JSONField(default=[])

    assert not shallow_copy_is_exact(WithList._declared_fields["tags"])
    assert WithList().fields["tags"].default is not WithList().fields["tags"].default


def test_a_field_holding_another_field_takes_drfs_deep_copy() -> None:
    class WithChild(StrictSerializer):
        headers = serializers.DictField(child=serializers.CharField())

    first, second = WithChild().fields["headers"], WithChild().fields["headers"]

    assert not shallow_copy_is_exact(WithChild._declared_fields["headers"])
    assert first.child is not second.child and first.child.parent is first


def test_a_field_class_with_its_own_constructor_takes_drfs_deep_copy() -> None:
    class Tagged(serializers.CharField):
        def __init__(self, **kwargs: Any) -> None:
            self.seen: list[str] = []
            super().__init__(**kwargs)

    assert shallow_copy_is_exact(serializers.CharField())
    assert not shallow_copy_is_exact(Tagged())
    assert not shallow_copy_is_exact(serializers.EmailField())  # DRF's subclasses with a constructor too


def test_a_bound_field_is_never_copied_shallow() -> None:
    field = serializers.CharField()
    field.bind("name", serializers.Serializer())

    assert not shallow_copy_is_exact(field)


def test_a_field_class_with_its_own_copy_protocol_takes_drfs_deep_copy() -> None:
    class Slotted(serializers.CharField):
        __slots__ = ("extra",)

    class SelfCopying(serializers.IntegerField):
        def __copy__(self) -> SelfCopying:
            return self

    assert not shallow_copy_is_exact(Slotted())
    assert not shallow_copy_is_exact(SelfCopying())


def test_copies_share_no_message_left_to_format() -> None:
    """DRF's lazy_format formats itself on its first str() and clears its inputs: two request
    threads failing the same bound at once raised TypeError (a 500) when copies shared one."""

    class Bounded(StrictSerializer):
        name = JsonStringField(max_length=3)
        count = JsonIntegerField(max_value=3)

    first, second = Bounded().fields, Bounded().fields

    for name in ("name", "count"):
        shared = [validator for validator in first[name].validators if validator in second[name].validators]
        messages = [validator.message for validator in shared if isinstance(validator.message, lazy_format)]
        assert messages, name  # the bound's validator is shared, with DRF's lazy message
        assert all(message.result is not None for message in messages), name  # formatted before the first copy
    assert not Bounded(data={"name": "long", "count": 4}).is_valid()


def test_threads_failing_the_same_bound_at_once_all_get_the_400_errors() -> None:
    class Bounded(StrictSerializer):
        name = JsonStringField(max_length=3)

    barrier = threading.Barrier(8)
    errors: list[Any] = []

    def validate() -> None:
        serializer = Bounded(data={"name": "long"})
        barrier.wait()
        serializer.is_valid()
        errors.append(serializer.errors)

    threads = [threading.Thread(target=validate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == [{"name": ["Ensure this field has no more than 3 characters."]}] * 8
