"""api.renderers.JSONRenderer writes the bytes DRF's JSONRenderer writes, or leaves the answer to it."""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import json
import uuid
from zoneinfo import ZoneInfo

import pytest
from django.utils.functional import lazy
from rest_framework import renderers
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from api.renderers import JSONRenderer, RawJSON
from tasks.models import TaskStatus

lazy_text = lazy(lambda: "lazy ✓", str)

VALUES = [
    {"items": [{"id": "a", "n": 1, "ok": True, "none": None}], "next_cursor": None},
    {"type": "https://jobsched.dev/problems/validation", "errors": {"http.url": ["destination not allowed"]}},
    {"text": 'naïve — 日本語 " \\ \n \t \x00 \x1f \x7f 😀'},
    {"separators": "a\u2028b\u2029c"},
    {"id": uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")},
    {"utc": datetime.datetime(2026, 12, 4, 11, 0, 0, 123456, tzinfo=datetime.UTC)},
    {"madrid": datetime.datetime(2026, 12, 4, 12, 0, tzinfo=ZoneInfo("Europe/Madrid"))},
    {
        "naive": datetime.datetime(2026, 12, 4, 12, 0),
        "date": datetime.date(2026, 12, 4),
        "time": datetime.time(1, 2, 3),
    },
    {"decimal": decimal.Decimal("1.50"), "delta": datetime.timedelta(seconds=90)},
    {"lazy": lazy_text(), "status": TaskStatus.ACTIVE},
    {"address": ipaddress.ip_address("127.0.0.1"), "set": {"only"}, "tuple": (1, 2), "bytes": b"raw"},
    ReturnDict({"a": ReturnList([1, 2], serializer=None)}, serializer=None),
    {"big": 2**64, "negative": -(2**63) - 1},  # past 64 bits: DRF's whole
    {1: "int key", None: "none key"},  # keys that are not text: DRF's whole
    [],
    {},
    "just text",
    12,
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_bytes_are_drfs(value):
    assert JSONRenderer().render(value) == renderers.JSONRenderer().render(value)


def test_a_float_is_the_same_number_in_its_shortest_form():
    value = {"float": 0.1, "int_like": 3.0, "small": 1e-7, "large": 1e22}
    ours = JSONRenderer().render(value)
    assert ours == b'{"float":0.1,"int_like":3.0,"small":1e-7,"large":1e22}'  # DRF: 1e-07, 1e+22
    assert json.loads(ours) == json.loads(renderers.JSONRenderer().render(value)) == value


@pytest.mark.parametrize("per_second", [0.01, 0.1, 0.5, 1.0, 2.5, 33.333, 1 / 3, 999.99, 10000.0])
def test_a_rate_limits_per_second_is_written_as_drf_writes_it(per_second):
    value = {"per_second": per_second, "burst": 10}
    assert JSONRenderer().render(value) == renderers.JSONRenderer().render(value)


@pytest.mark.parametrize(
    "changed", [{"ensure_ascii": True}, {"compact": False}, {"strict": False}, {"encoder_class": json.JSONEncoder}]
)
def test_drfs_json_settings_changed_leave_every_answer_to_drfs_renderer(changed, monkeypatch):
    value = {"text": "naïve", "n": float("nan")} if changed.get("strict") is False else {"text": "naïve", "n": 1}
    for name, setting in changed.items():
        monkeypatch.setattr(JSONRenderer, name, setting)
        monkeypatch.setattr(renderers.JSONRenderer, name, setting)
    assert JSONRenderer().render(value) == renderers.JSONRenderer().render(value)


def test_an_indented_answer_is_drfs():
    value = {"a": [1, {"b": None}]}
    for media_type in ("application/json; indent=4", "application/json; indent=2"):
        assert JSONRenderer().render(value, media_type) == renderers.JSONRenderer().render(value, media_type)
    context = {"indent": 2}
    assert JSONRenderer().render(value, None, context) == renderers.JSONRenderer().render(value, None, context)


def test_raw_json_goes_in_as_written_and_drfs_renderer_gets_it_parsed():
    text = '[{"a": 1, "b": "naïve"}, {"c": null, "d": "line\u2028end"}]'
    value = {"results": RawJSON(text), "next_cursor": None}
    parsed = {"results": json.loads(text), "next_cursor": None}

    written = JSONRenderer().render(value)
    assert written == b'{"results":' + text.replace("\u2028", "\\u2028").encode() + b',"next_cursor":null}'
    assert json.loads(written) == parsed
    indented = "application/json; indent=4"
    assert JSONRenderer().render([value], indented) == renderers.JSONRenderer().render([parsed], indented)


def test_nothing_is_empty_and_what_drf_refuses_is_refused():
    assert JSONRenderer().render(None) == b""
    aware_time = datetime.time(1, 2, tzinfo=datetime.UTC)
    with pytest.raises(ValueError, match="timezone-aware times"):
        JSONRenderer().render({"t": aware_time})
    with pytest.raises(TypeError):
        JSONRenderer().render({"object": object()})


def test_the_api_answers_with_it(settings):
    from rest_framework.settings import api_settings

    assert [renderer.__name__ for renderer in api_settings.DEFAULT_RENDERER_CLASSES] == ["JSONRenderer"]
    assert api_settings.DEFAULT_RENDERER_CLASSES[0] is JSONRenderer
