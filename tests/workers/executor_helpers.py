"""Shared builders for the executor tests."""

from __future__ import annotations

import asyncio
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from jobs.queue import ClaimedJob
from tasks.egress import Allowlist, EgressPolicy
from workers.executor.http import ENGINES, DeliveryClient


def claimed(url: str, **overrides: Any) -> ClaimedJob:
    """A ClaimedJob as the claim would return it, without a database."""
    now = datetime.now(UTC)
    fields: dict[str, Any] = {
        "id": uuid.uuid4(),
        "tenant_id": "tenant-a",
        "task_id": uuid.uuid4(),
        "scheduled_at": now,
        "attempt": 1,
        "fence": 1,
        "max_attempts": 3,
        "next_attempt_at": now,
        "timeout_seconds": 5,
        "backoff_base_seconds": 10,
        "method": "POST",
        "url": url,
        "headers": {},
        "body": "",
        "secret_ref": None,
        "due_in": 0.0,
    }
    fields.update(overrides)
    return ClaimedJob(**fields)


def policy_for(*entries: str) -> EgressPolicy:
    """The policy with an EGRESS_ALLOWLIST of exactly `entries` (no global settings touched)."""
    return EgressPolicy(Allowlist.parse(",".join(entries)))


ENGINE = "httptools"  # the default engine; each_engine runs a test on all three


@pytest.fixture(params=ENGINES, autouse=False)
def each_engine(request, monkeypatch):
    """Run a test once per HTTP engine (`send` picks it up)."""
    monkeypatch.setattr(sys.modules[__name__], "ENGINE", request.param)
    return request.param


def send(job: ClaimedJob, **client_kwargs: Any):
    """Send one job on a fresh client (the current ENGINE) in a fresh event loop."""

    async def main():
        client = DeliveryClient(engine=ENGINE, **client_kwargs)
        try:
            return await client.send(job)
        finally:
            await client.aclose()

    return asyncio.run(main())
