"""Each tenant's signing keys in the executor: loaded per claimed batch, kept a few seconds per process.

`refresh` runs on the claim thread right after a claim commits, with one query
for the batch's tenants whose keys are missing or older than `ttl_seconds`
(none at all when every tenant is fresh), so sending never waits on MySQL. A
deleted or expired secret stops signing within `ttl_seconds`. When the query
fails, or one of a tenant's secrets does not open, that tenant is marked
unknown and its calls fail (and retry) rather than going out unsigned.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from django.db import connection
from django.db.utils import InterfaceError, OperationalError

from signing.selectors import signing_keys

logger = logging.getLogger(__name__)

DEFAULT_TTL_SECONDS = 10.0


class SigningUnavailable(Exception):
    """The tenant's signing keys could not be loaded; the attempt fails rather than going out unsigned."""


class SigningKeys:
    def __init__(
        self,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        load: Callable[..., dict[str, list[bytes] | None]] = signing_keys,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl_seconds
        self._load = load
        self._clock = clock
        # tenant -> (loaded at, keys newest first, or None: the load failed). Replaced whole per entry,
        # so the event loop thread reading it never sees a half-written value.
        self._entries: dict[str, tuple[float, list[bytes] | None]] = {}
        self._load_failed: set[str] = set()  # tenants whose None came from a failed query, not a closed secret
        self.loads = 0  # queries run (for tests and metrics)

    def refresh(self, tenant_ids: Iterable[str]) -> None:
        """Load the keys of the tenants not fresh in the cache; never raises (the claim is already committed)."""
        now = self._clock()
        stale = {
            tenant
            for tenant in tenant_ids
            if (entry := self._entries.get(tenant)) is None
            or (entry[1] is None and tenant in self._load_failed)
            or now - entry[0] >= self._ttl
        }
        if not stale:
            return
        self.loads += 1
        try:
            loaded = self._load(tenant_ids=stale)
        except (OperationalError, InterfaceError) as exc:
            connection.close()  # the next claim reconnects
            logger.warning("signing keys not loaded", extra={"event": "signing_keys_failed", "error": str(exc)})
            for tenant in stale:
                self._entries[tenant] = (now, None)
            self._load_failed |= stale  # retried at the next claim: the database may be back
            return
        self._load_failed -= stale
        for tenant in stale:
            # None: a secret that does not open; kept for the TTL like keys, not re-read (and re-logged) per claim.
            self._entries[tenant] = (now, loaded.get(tenant, []))

    def keys_for(self, tenant_id: str) -> list[bytes]:
        """The tenant's keys ([] when it signs nothing); SigningUnavailable when they could not be loaded."""
        entry = self._entries.get(tenant_id)
        if entry is None or entry[1] is None:
            raise SigningUnavailable(tenant_id)
        return entry[1]
