"""A task's `schedule.exclude_calendars`: the list's rules, for the task serializer (tasks.serializers)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from tasks.calendars import rules, selectors

HELP = (
    f"up to {rules.MAX_EXCLUDE_CALENDARS} names of the tenant's calendars (PUT /v1/calendars/{{name}}): "
    "a run whose local date one of them holds is created skipped (reason calendar:<name>)"
)


def exclude_calendars(value: Any, tenant_id: str | None) -> tuple[str, ...]:
    """The validated names, in order; a ValidationError names the entry (`exclude_calendars[0]`).

    Without a tenant (no such caller today) existence is not checked.
    """
    if value is None:
        return ()
    if not isinstance(value, list):
        raise serializers.ValidationError({"exclude_calendars": ["must be a list of calendar names"]})
    if len(value) > rules.MAX_EXCLUDE_CALENDARS:
        raise serializers.ValidationError({"exclude_calendars": [f"at most {rules.MAX_EXCLUDE_CALENDARS} calendars"]})
    seen: set[str] = set()
    for index, name in enumerate(value):
        if not rules.is_valid_name(name):
            raise serializers.ValidationError(
                {f"exclude_calendars[{index}]": [f"a calendar name is {rules.NAME_RULE}"]}
            )
        if name in seen:
            raise serializers.ValidationError({f"exclude_calendars[{index}]": ["named twice"]})
        seen.add(name)
    if tenant_id is not None:
        missing = selectors.calendars_missing(tenant_id=tenant_id, names=value)
        if missing:
            index = value.index(missing[0])
            raise serializers.ValidationError(
                {f"exclude_calendars[{index}]": ["no such calendar (create it first: PUT /v1/calendars/{name})"]}
            )
    return tuple(value)
