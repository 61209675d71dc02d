"""DATABASE_URLs for vtgate's targets: a keyspace, or one shard of it (`keyspace:shard`)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from django.conf import settings


def target_url(target: str, *, url: str | None = None) -> str:
    """`url` (default DATABASE_URL) with its database replaced by a vtgate target."""
    parts = urlsplit(url or settings.DATABASE_URL)
    return urlunsplit(parts._replace(path="/" + target))


def shard_targets() -> list[str]:
    """`jobsched_tenants:-80`, ...: one loop set runs against each (docs/scaling.md)."""
    return [f"{settings.VITESS_TENANT_KEYSPACE}:{shard}" for shard in settings.VITESS_SHARDS]
