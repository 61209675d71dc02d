"""StrictSerializer.validated: a thread's kept instance validates as a new one would, call after call."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from rest_framework import serializers

from api.strict_serializer import StrictSerializer, _idle
from tasks.serializers import TaskInput

pytestmark = pytest.mark.django_db

VALID = {
    "name": "report",
    "schedule": {"cron": "*/5 * * * *", "timezone": "Europe/Madrid"},
    "http": {"url": "http://93.184.216.34/hook", "method": "POST", "headers": {"X-A": "1"}, "body": "{}"},
}


def _with(**changes: Any) -> dict[str, Any]:
    body = {**VALID, "schedule": dict(VALID["schedule"]), "http": dict(VALID["http"])}
    for path, value in changes.items():
        *parents, key = path.split("__")
        target = body
        for parent in parents:
            target = target[parent]
        if value is ...:
            del target[key]
        else:
            target[key] = value
    return body


# Valid and invalid bodies, each failing a different field or rule (several at once in some).
BODIES: list[Any] = [
    VALID,
    _with(name=""),
    _with(name=7, timeout_seconds="30"),
    _with(schedule__cron="61 * * * *"),
    _with(schedule__timezone="Mars/Base"),
    _with(schedule__run_at="2020-01-01T00:00:00Z", schedule__cron=...),
    _with(schedule={"every": "90m", "window_seconds": 60}),
    _with(http__url="http://10.0.0.1/"),
    _with(http__method="BREW", http__headers={"Bad Name": "x"}),
    _with(labels={"env": "prod", "team": "a"}),
    _with(labels={"-bad": "x"}),
    _with(tenant_id="other"),
    _with(priority=0, max_attempts=101),
    _with(overlap="skip", missed_runs="latest", auto_pause_after=3),
    [],
    None,
    "text",
    _with(http=...),
    _with(schedule__cron=..., schedule__timezone=...),
    VALID,
]


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "valid", call()
    except serializers.ValidationError as exc:
        return "invalid", exc.detail


def _fresh(body: Any, context: dict[str, Any]) -> tuple[str, Any]:
    def call() -> Any:
        serializer = TaskInput(data=body, context=context)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    return _outcome(call)


def _comparable(outcome: tuple[str, Any]) -> Any:
    kind, value = outcome
    if kind == "valid":
        value = {**value, "schedule": {**vars(value["schedule"]), "known_first": None}}  # the clock moved
    return kind, value


def test_the_kept_instance_answers_each_body_as_a_new_serializer_does() -> None:
    context = {"tenant_id": "t-reuse"}
    for body in BODIES:
        kept = _outcome(lambda body=body: TaskInput.validated(body, context=context))
        assert _comparable(kept) == _comparable(_fresh(body, context)), body


def test_the_bodies_cover_valid_and_invalid_answers() -> None:
    outcomes = [_fresh(body, {"tenant_id": "t-reuse"})[0] for body in BODIES]
    assert outcomes.count("valid") >= 4 and outcomes.count("invalid") >= 10


def test_one_calls_context_is_not_the_nexts() -> None:
    class Current:
        http_url = "http://10.0.0.1/"  # refused on create, kept by an edit that leaves it as it is
        secret_ref = None
        run_at = None
        ends_at = None

    edit = _with(http__url=Current.http_url)
    assert TaskInput.validated(edit, context={"tenant_id": "t-reuse", "current": Current()})["http"]["url"]
    with pytest.raises(serializers.ValidationError) as refused:
        TaskInput.validated(edit, context={"tenant_id": "t-reuse"})
    assert "url" in refused.value.detail["http"]


def test_nothing_of_a_call_stays_on_the_kept_instance() -> None:
    TaskInput.validated(VALID, context={"tenant_id": "t-reuse"})
    with pytest.raises(serializers.ValidationError):
        TaskInput.validated(_with(name=""), context={"tenant_id": "t-reuse"})
    kept = _idle.serializers[TaskInput]
    assert kept._context == {}
    assert not {"initial_data", "_validated_data", "_errors", "_data"} & set(vars(kept))


def test_a_validation_inside_another_takes_a_new_instance() -> None:
    seen: list[int] = []

    class Outer(StrictSerializer):
        depth = serializers.IntegerField()

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            seen.append(id(self))
            if attrs["depth"] > 0:
                inner = Outer.validated({"depth": attrs["depth"] - 1}, context={"level": attrs["depth"] - 1})
                assert self.context == {"level": attrs["depth"]}  # the inner call left this one's alone
                attrs["inner"] = inner
            return attrs

    result = Outer.validated({"depth": 2}, context={"level": 2})
    assert result["inner"]["inner"] == {"depth": 0}
    assert len(set(seen)) == 3


def test_threads_validate_at_once_each_with_its_own_instance() -> None:
    both_inside = threading.Barrier(2, timeout=10)
    seen: dict[str, tuple[int, Any]] = {}

    class Waiting(StrictSerializer):
        who = serializers.CharField()

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            both_inside.wait()  # each thread is inside its validation when the other reads its context
            seen[attrs["who"]] = (id(self), self.context["tenant_id"])
            return attrs

    def run(who: str) -> None:
        Waiting.validated({"who": who}, context={"tenant_id": f"tenant-{who}"})

    threads = [threading.Thread(target=run, args=(who,)) for who in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert seen["a"][1] == "tenant-a" and seen["b"][1] == "tenant-b"
    assert seen["a"][0] != seen["b"][0]


def test_what_reading_a_raised_errors_serializer_leaves_is_cleared_before_the_next_call(monkeypatch) -> None:
    with pytest.raises(serializers.ValidationError) as refused:
        TaskInput.validated(_with(name=""), context={"tenant_id": "t-reuse"})
    initial = refused.value.detail.serializer.data  # DRF keeps it on the instance as `_data`
    assert vars(_idle.serializers[TaskInput])["_data"] == initial
    seen: list[set[str]] = []
    original = TaskInput.to_internal_value

    def spy(self: Any, data: Any) -> Any:
        seen.append({"_data", "_errors", "_validated_data"} & set(vars(self)))
        return original(self, data)

    monkeypatch.setattr(TaskInput, "to_internal_value", spy)
    TaskInput.validated(VALID, context={"tenant_id": "t-reuse"})
    assert seen == [set()]
