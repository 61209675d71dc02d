"""Shared builders for the executor tests."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

from jobs.queue import ClaimedJob
from outbound.client import DeliveryClient
from outbound.egress import Allowlist, EgressPolicy
from workers.executor.credentials import Credentials, send_with_credentials
from workers.executor.secrets import SecretsProvider
from workers.executor.signing import SigningKeys


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


def send(
    job: ClaimedJob, *, secrets: SecretsProvider | None = None, signing: SigningKeys | None = None, **client_kwargs: Any
):
    """Send one job as the executor does (its credential and keys handed over) on a fresh client and event loop."""

    async def main():
        client = DeliveryClient(**client_kwargs)
        try:
            return await send_with_credentials(
                job, client=client, credentials=Credentials(secrets=secrets, signing=signing)
            )
        finally:
            await client.aclose()

    return asyncio.run(main())
