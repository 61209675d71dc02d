"""The compiled output serializers render exactly what DRF's generic loop renders."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.utils import timezone
from rest_framework import serializers

from api.compiled_representation import CompiledRepresentation
from tasks.serializers import TaskOutput
from tests.factories import varied_tasks


def _drf_rendering(monkeypatch: pytest.MonkeyPatch, render: Any) -> Any:
    """What `render()` gives with DRF's own Serializer.to_representation everywhere (nested ones too)."""
    with monkeypatch.context() as patched:
        patched.setattr(CompiledRepresentation, "to_representation", serializers.Serializer.to_representation)
        return render()


@pytest.mark.django_db
def test_task_page_renders_as_drf_renders_it(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = varied_tasks() * 2  # the first object takes DRF's loop, the plan renders every other

    compiled = TaskOutput(tasks, many=True).data
    generic = _drf_rendering(monkeypatch, lambda: TaskOutput(tasks, many=True).data)

    assert compiled == generic
    assert [list(row) for row in compiled] == [list(row) for row in generic]  # the same key order too
    assert any(task["next_run_at"] and task["next_run_at"].endswith("Z") for task in compiled)
    assert sum(task["last_run"] is not None for task in compiled) == 4  # two tasks with a last run, twice


@pytest.mark.django_db
def test_times_render_in_the_current_zone_as_drf_renders_them(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = varied_tasks() * 2

    with timezone.override("Europe/Madrid"):
        compiled = TaskOutput(tasks, many=True).data
        generic = _drf_rendering(monkeypatch, lambda: TaskOutput(tasks, many=True).data)

    assert compiled == generic
    assert compiled[0]["created_at"].endswith(("+01:00", "+02:00"))


class _Edges(CompiledRepresentation):
    text = serializers.CharField()
    number = serializers.IntegerField(source="count")
    missing = serializers.CharField(default="fallback")
    called = serializers.CharField()
    naive = serializers.DateTimeField()
    aware = serializers.DateTimeField()
    own_zone = serializers.DateTimeField(default_timezone=UTC)
    formatted = serializers.DateTimeField(format="%Y")
    ident = serializers.UUIDField(format="hex")
    nothing = serializers.IntegerField(allow_null=True)


class _Thing:
    text = 7
    count = "12"
    naive = datetime(2030, 1, 2, 3, 4, 5)  # naive on purpose: DRF makes it aware
    aware = datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    own_zone = aware
    formatted = aware
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    nothing = None

    def called(self) -> str:
        return "from a method"


def test_fallbacks_render_as_drf_renders_them(monkeypatch: pytest.MonkeyPatch) -> None:
    mapping = {name: getattr(_Thing, name) for name in ("text", "count", "naive", "aware", "ident", "nothing")}
    mapping.update(own_zone=_Thing.aware, formatted=_Thing.aware, called="from a mapping")

    for instance in (_Thing(), mapping):
        compiled = _Edges([instance, instance], many=True).data  # the second one through the plan
        generic = _drf_rendering(monkeypatch, lambda instance=instance: _Edges([instance, instance], many=True).data)
        assert compiled == generic

    assert _Edges(_Thing()).data["called"] == "from a method"
    assert _Edges(_Thing()).data["missing"] == "fallback"
