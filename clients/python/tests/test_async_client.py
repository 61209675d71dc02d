"""The asyncio client against the live server: the same operations, awaited."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from jobsched_client import AsyncClient, CalendarSpec, HttpCall, PreconditionFailed, Schedule, TaskSpec


def test_the_async_client_creates_pages_edits_and_conflicts(base_url: str, token: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url, token) as api:
            specs = [
                TaskSpec(name=f"a{i}", schedule=Schedule(cron="@daily"), http=HttpCall(url="http://127.0.0.1:9/"))
                for i in range(3)
            ]
            created = await asyncio.gather(*(api.tasks.create(s) for s in specs))
            listed = [task.id async for task in api.tasks.list(limit=2)]
            assert sorted(listed) == sorted(task.id for task in created)
            edited = await api.tasks.update(created[0], {"priority": 1})
            assert edited.priority == 1
            with pytest.raises(PreconditionFailed):
                await api.tasks.update(created[0], {"priority": 2})
            assert (await api.capabilities()).task_defaults["timeout_seconds"] == 30

    asyncio.run(scenario())


def test_the_async_client_exports_and_imports(base_url: str, token: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url, token) as api:
            spec = TaskSpec(
                name="async", schedule=Schedule(cron="@daily"), http=HttpCall(url="http://127.0.0.1:9/"),
                labels={"env": "prod"},
            )  # fmt: skip
            planned = await api.tasks.import_([spec], dry_run=True)
            assert [item.action for item in planned.lines] == ["create"]
            assert (await api.tasks.import_([spec])).created == 1
            exported = [line async for line in api.tasks.export()]
            assert [(line["name"], line["labels"]) for line in exported] == [("async", {"env": "prod"})]
            labelled = [task.name async for task in api.tasks.list(label={"env": "prod"})]
            assert labelled == ["async"]

    asyncio.run(scenario())


def test_the_async_client_sets_lists_and_deletes_rate_limits(base_url: str, token: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url, token) as api:
            limit = await api.rate_limits.set("https://a.example", per_second=3, burst=2)
            assert limit.origin == "https://a.example:443"
            assert [r.id async for r in api.rate_limits.list()] == [limit.id]
            assert (await api.rate_limits.get(limit.id)).burst == 2
            await api.rate_limits.delete(limit.id)
            assert (await api.rate_limits.page()).results == []

    asyncio.run(scenario())


def test_the_async_client_reads_a_tasks_changes(base_url: str, token: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url, token) as api:
            task = await api.tasks.create(
                TaskSpec(name="audited", schedule=Schedule(cron="@daily"), http=HttpCall(url="http://127.0.0.1:9/"))
            )
            await api.tasks.pause(task.id)
            actions = [change.action async for change in api.tasks.changes(task.id, limit=1)]
            assert actions == ["pause", "create"]

    asyncio.run(scenario())


def test_the_async_client_puts_reads_and_deletes_notifications(base_url: str, token: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url, token) as api:
            put = await api.notifications.put(url="http://127.0.0.1:9/n", events=["job.dead"], failing_after=5)
            assert (await api.notifications.get()) == put and put.failing_after == 5
            assert [d async for d in api.notifications.deliveries()] == []
            await api.notifications.delete()

    asyncio.run(scenario())


def test_the_async_client_puts_calendars_and_backfills(base_url: str, token: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(base_url, token) as api:
            calendar = await api.calendars.put("async-hols", CalendarSpec(timezone="UTC", dates=["2027-12-25"]))
            assert [c.name async for c in api.calendars.list()] == ["async-hols"]
            assert (await api.calendars.get("async-hols")).dates == ["2027-12-25"]
            task = await api.tasks.create(
                TaskSpec(name="async bf", schedule=Schedule(cron="@hourly"), http=HttpCall(url="http://127.0.0.1:9/"))
            )
            end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
            result = await api.tasks.backfill(task.id, start=end - timedelta(hours=3), end=end)
            assert (result.created, result.existing, result.excluded) == (3, 0, 0)
            await api.calendars.delete(calendar)

    asyncio.run(scenario())
