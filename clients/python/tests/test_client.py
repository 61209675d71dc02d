"""The sync client against the live server: every resource, ETags, idempotency, pages, typed errors, retries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobsched_client import (
    BackfillResult,
    CalendarSpec,
    Client,
    Conflict,
    HttpCall,
    IdempotencyKeyReused,
    NotFound,
    PreconditionFailed,
    RateLimited,
    RetryPolicy,
    Schedule,
    TaskSpec,
    Unauthorized,
    ValidationFailed,
)
from tests.server import Receiver


def spec(name: str, url: str = "http://127.0.0.1:9/hook", **fields) -> TaskSpec:
    return TaskSpec(
        name=name, schedule=Schedule(cron="0 9 * * 1-5", timezone="Europe/Madrid"), http=HttpCall(url=url), **fields
    )


def test_a_task_is_created_read_and_listed_with_typed_fields(api: Client) -> None:
    created = api.tasks.create(spec("report", priority=2))
    assert created.status == "active"
    assert created.etag == '"1"'
    assert created.schedule == Schedule(cron="0 9 * * 1-5", timezone="Europe/Madrid")
    assert created.priority == 2
    assert created.next_run_at is not None and created.next_run_at.tzinfo is not None
    assert api.tasks.get(created.id) == created
    assert [task.id for task in api.tasks.list()] == [created.id]


def test_the_list_follows_cursors_across_pages(api: Client) -> None:
    ids = [api.tasks.create(spec(f"t{i}")).id for i in range(5)]
    first = api.tasks.page(limit=2)
    assert len(first.results) == 2 and first.next_cursor
    assert [task.id for task in api.tasks.list(limit=2)] == list(reversed(ids))


def test_create_with_the_same_idempotency_key_returns_the_same_task(api: Client) -> None:
    first = api.tasks.create(spec("once"), idempotency_key="create-once-1")
    again = api.tasks.create(spec("once"), idempotency_key="create-once-1")
    assert again.id == first.id
    assert len(list(api.tasks.list())) == 1
    with pytest.raises(IdempotencyKeyReused) as caught:
        api.tasks.create(spec("other"), idempotency_key="create-once-1")
    assert caught.value.field == "Idempotency-Key"


def test_an_edit_sends_the_etag_read_and_a_stale_one_is_a_typed_conflict(api: Client) -> None:
    task = api.tasks.create(spec("edit me"))
    edited = api.tasks.update(task, {"name": "edited", "http": {"body": "x"}})
    assert (edited.name, edited.http.body, edited.version) == ("edited", "x", task.version + 1)
    with pytest.raises(PreconditionFailed) as caught:
        api.tasks.update(task, {"name": "lost update"})  # the ETag of version 1
    assert caught.value.current_etag == edited.etag
    assert api.tasks.get(task.id).name == "edited"
    with pytest.raises(PreconditionFailed):
        api.tasks.delete(task)
    api.tasks.delete(edited)
    with pytest.raises(NotFound):
        api.tasks.get(task.id)


def test_a_refused_field_is_named_in_the_typed_error(api: Client) -> None:
    with pytest.raises(ValidationFailed) as caught:
        api.tasks.create(spec("bad", url="ftp://example.com/x"))
    assert caught.value.field == "http.url"
    assert caught.value.status == 400 and caught.value.slug == "validation-error"
    assert "http.url" in str(caught.value)


def test_pause_resume_preview_run_and_dry_run(api: Client) -> None:
    task = api.tasks.create(spec("ops"))
    assert api.tasks.pause(task.id).status == "paused"
    assert api.tasks.resume(task.id).status == "active"
    preview = api.tasks.preview(task.id, n=3)
    assert preview.timezone == "Europe/Madrid" and len(preview.runs) == 3
    assert api.schedules.preview(Schedule(cron="@hourly"), n=2).runs[1].at.minute == 0
    job = api.tasks.run(task.id, idempotency_key="run-1")
    assert job.task_id == task.id and job.status in ("pending", "running", "succeeded", "dead")
    assert api.tasks.run(task.id, idempotency_key="run-1").id == job.id
    assert api.jobs.get(job.id).id == job.id
    assert [j.id for j in api.tasks.history(task.id)] == [job.id]
    dry = api.tasks.dry_run(task.id)
    assert dry.sent is False and dry.request.url == task.http.url
    assert list(api.jobs.dlq()) == []


def test_secrets_and_signing_secrets(api: Client) -> None:
    secret = api.secrets.put("api-token", "Bearer s3cret")
    assert (secret.name, secret.version) == ("api-token", 1)
    assert [s.name for s in api.secrets.list()] == ["api-token"]
    assert api.tasks.create(spec("with secret", secret_ref="api-token")).secret_ref == "api-token"
    api.secrets.delete("api-token")
    with pytest.raises(NotFound):
        api.secrets.get("api-token")
    created = api.signing_secrets.create()
    assert created.secret.startswith("whsec_")
    assert [s.id for s in api.signing_secrets.list()] == [created.id]
    assert api.signing_secrets.get(created.id).id == created.id
    api.signing_secrets.delete(created.id)
    assert api.signing_secrets.list() == []


def test_rate_limits_set_replace_page_and_delete(api: Client) -> None:
    first = api.rate_limits.set("HTTPS://Hooks.Example.com", per_second=2.5, burst=5)
    assert (first.origin, first.per_second, first.burst) == ("https://hooks.example.com:443", 2.5, 5)
    assert api.rate_limits.set("https://hooks.example.com:443", per_second=1, burst=1).id == first.id
    second = api.rate_limits.set("http://127.0.0.1:9", per_second=10, burst=10)
    page = api.rate_limits.page(limit=1)
    assert [r.id for r in page.results] == [second.id] and page.next_cursor is not None
    assert [r.id for r in api.rate_limits.list(limit=1)] == [second.id, first.id]
    with pytest.raises(ValidationFailed):
        api.rate_limits.set("ftp://x.example", per_second=1, burst=1)
    api.rate_limits.delete(first.id)
    with pytest.raises(NotFound):
        api.rate_limits.get(first.id)


def test_another_tenants_task_is_not_found(api: Client, base_url: str, _tokens) -> None:
    task = api.tasks.create(spec("mine"))
    _, other_token = next(_tokens)
    with Client(base_url, other_token) as other, pytest.raises(NotFound):
        other.tasks.get(task.id)


def test_a_bad_token_is_unauthorized(base_url: str) -> None:
    with Client(base_url, "not-a-jwt") as client, pytest.raises(Unauthorized):
        list(client.tasks.list())


def test_429_and_503_are_retried_after_retry_after(receiver: Receiver) -> None:
    receiver.script = [429, 503]
    receiver.retry_after = "1"
    with Client(receiver.url, "t") as client:
        assert client.schema() == {"ok": True}
    gaps = [b["at"] - a["at"] for a, b in zip(receiver.requests, receiver.requests[1:], strict=False)]
    assert len(receiver.requests) == 3
    assert all(gap >= 0.95 for gap in gaps), gaps


def test_a_429_past_the_retries_is_a_typed_error_with_the_hint(receiver: Receiver) -> None:
    receiver.script = [429, 429, 429]
    receiver.retry_after = "0"
    with Client(receiver.url, "t", retry=RetryPolicy(attempts=2)) as client, pytest.raises(RateLimited) as caught:
        client.tasks.get("x")
    assert caught.value.retry_after == 0.0
    assert len(receiver.requests) == 2


def test_labels_are_created_merged_removed_and_selected(api: Client) -> None:
    prod = api.tasks.create(spec("prod report", labels={"env": "prod", "team": "ops"}))
    assert prod.labels == {"env": "prod", "team": "ops"}
    staging = api.tasks.create(spec("staging report", labels={"env": "staging", "team": "ops"}))
    assert api.tasks.create(spec("unlabelled")).labels == {}
    # A merge patch: a string sets a key, null removes it, keys not named stay.
    edited = api.tasks.update(prod, {"labels": {"tier": "gold", "team": None}})
    assert edited.labels == {"env": "prod", "tier": "gold"}
    assert [task.id for task in api.tasks.list(label={"env": "prod"})] == [prod.id]
    assert [task.id for task in api.tasks.list(label={"team": "ops"})] == [staging.id]
    assert list(api.tasks.list(label={"env": "prod", "team": "ops"})) == []  # every selector must hold
    with pytest.raises(ValidationFailed) as caught:
        list(api.tasks.list(label={"Env": "prod"}))
    assert caught.value.field == "label"


def test_export_streams_every_task_and_importing_it_back_changes_nothing(api: Client) -> None:
    api.secrets.put("api-token", "Bearer s3cret")
    first = api.tasks.create(spec("one", labels={"env": "prod"}, secret_ref="api-token"))
    second = api.tasks.create(spec("two", priority=1))
    exported = list(api.tasks.export())
    assert [line["id"] for line in exported] == [first.id, second.id]  # oldest first
    line = next(line for line in exported if line["id"] == first.id)
    assert (line["name"], line["status"], line["labels"]) == ("one", "active", {"env": "prod"})
    assert line["secret_ref"] == "api-token"
    assert "s3cret" not in repr(exported)
    result = api.tasks.import_(exported)
    assert (result.dry_run, result.created, result.updated, result.unchanged) == (False, 0, 0, 2)
    assert {item.id for item in result.lines} == {first.id, second.id}
    assert api.tasks.get(first.id).version == first.version


def test_import_plans_in_a_dry_run_then_upserts_by_name(api: Client) -> None:
    kept = api.tasks.create(spec("kept"))
    lines = [
        spec("kept", priority=2),  # a TaskSpec is a line too
        {"name": "new", "schedule": {"cron": "@daily"}, "http": {"url": "http://127.0.0.1:9/new"}},
    ]
    planned = api.tasks.import_(lines, dry_run=True)
    assert planned.dry_run is True
    assert [(item.line, item.name, item.action, item.fields) for item in planned.lines] == [
        (1, "kept", "update", ["priority"]),
        (2, "new", "create", []),
    ]
    assert planned.lines[1].id is None
    assert [task.name for task in api.tasks.list()] == ["kept"]  # nothing written
    applied = api.tasks.import_(lines)
    assert (applied.created, applied.updated, applied.unchanged) == (1, 1, 0)
    assert api.tasks.get(kept.id).priority == 2
    assert sorted(task.name for task in api.tasks.list()) == ["kept", "new"]


def test_a_refused_import_line_is_named_and_nothing_is_written(api: Client) -> None:
    lines = [spec("good"), {"name": "bad", "schedule": {"cron": "61 * * * *"}, "http": {"url": "http://127.0.0.1:9/"}}]
    with pytest.raises(ValidationFailed) as caught:
        api.tasks.import_(lines)
    assert caught.value.field == "lines[2].schedule.cron"
    assert list(api.tasks.list()) == []


def test_a_tasks_changes_are_read_newest_first_page_by_page(api: Client) -> None:
    task = api.tasks.create(spec("audited", priority=2))
    api.tasks.pause(task.id)
    api.tasks.resume(task.id)

    changes = list(api.tasks.changes(task.id, limit=2))

    assert [change.action for change in changes] == ["resume", "pause", "create"]
    assert changes[0].actor.startswith(("token:", "tenant:")) and changes[0].at.tzinfo is not None
    status = next(entry for entry in changes[0].changes if entry.field == "status")
    assert (status.old, status.new, status.masked) == ("paused", "active", False)
    assert api.tasks.changes_page(task.id, limit=1).next_cursor is not None
    with pytest.raises(NotFound):
        api.tasks.changes_page("0193a1e0-1111-7222-8333-944455566677")


def test_notifications_are_put_read_listed_and_deleted(api: Client) -> None:
    with pytest.raises(NotFound):
        api.notifications.get()
    created = api.notifications.put(url="http://127.0.0.1:9/notify", events=["task.failing", "job.dead"])
    assert (created.events, created.failing_after, created.enabled) == (["job.dead", "task.failing"], 3, True)
    replaced = api.notifications.put(url="http://127.0.0.1:9/notify", events=["task.completed"], enabled=False)
    assert api.notifications.get() == replaced and replaced.enabled is False
    assert list(api.notifications.deliveries()) == []
    with pytest.raises(ValidationFailed) as refused:
        api.notifications.put(url="http://127.0.0.1:9/notify", events=["task.exploded"])
    assert any(name.startswith("events") for name in refused.value.errors)
    api.notifications.delete()
    with pytest.raises(NotFound):
        api.notifications.get()


def test_calendars_and_a_backfill_honouring_them(api: Client) -> None:
    end = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = end - timedelta(days=2)
    closed = CalendarSpec(timezone="UTC", dates=[(end - timedelta(days=1)).date().isoformat()])
    calendar = api.calendars.put("closed", closed)
    assert (calendar.name, calendar.version, calendar.etag) == ("closed", 1, '"1"')
    with pytest.raises(PreconditionFailed):
        api.calendars.put("closed", closed, etag='"9"')
    assert [c.name for c in api.calendars.list()] == ["closed"]
    hourly = Schedule(cron="0 * * * *", exclude_calendars=["closed"])
    task = api.tasks.create(TaskSpec(name="hourly", schedule=hourly, http=HttpCall(url="http://127.0.0.1:9/hook")))
    assert task.schedule.exclude_calendars == ["closed"]
    assert api.tasks.backfill(task.id, start=start, end=end) == BackfillResult(created=24, existing=0, excluded=24)
    assert api.tasks.backfill(task.id, start=start, end=end) == BackfillResult(created=0, existing=48, excluded=0)
    with pytest.raises(Conflict):
        api.calendars.delete(calendar)
    api.tasks.delete(task.id)
    api.calendars.delete(api.calendars.get("closed"))
    with pytest.raises(NotFound):
        api.calendars.get("closed")
