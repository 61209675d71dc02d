"""Credentials named by a task's `secret_ref`, resolved by (tenant, name) for the job being sent.

A port (`SecretsProvider`): the task stores only a name, and the name means one
of the job's own tenant's secrets, never another's. The adapter the executor
runs, `TenantSecrets`, reads the tenant's secrets stored through the API
(vault, encrypted at rest), then the tenant's namespace of an operator-mounted
SECRETS_DIR (vault/mounted.py). The value is sent as `Authorization`.

No query per job: `prefetch` runs on the claim thread right after each claim
and resolves every (tenant, name) of the batch in one query; `get`, on the
event loop, only reads what it loaded. Chosen over a cache keyed by version
because it needs no query to learn a version, and a value is never older than
the claim that fires it (at most one poll interval): a replaced or deleted
secret takes effect from the next claim.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping

from domain.secret_refs import is_secret_ref
from outbound.headers import is_header_value
from vault.mounted import MountedSecretUnreadable, read_mounted
from vault.rules import MAX_VALUE_BYTES
from vault.selectors import secret_values

logger = logging.getLogger(__name__)

# How long a prefetched value stays: a job fires within one poll of its claim, so this is slack.
PREFETCH_SECONDS = 120.0

Pair = tuple[str, str]  # (tenant id, secret name)


class SecretUnavailable(Exception):
    """No such secret for this tenant (another tenant's included), or it is unusable; the attempt fails."""


class SecretsProvider:
    """Port: `get(tenant_id, name)` returns the value or raises SecretUnavailable."""

    def prefetch(self, pairs: Iterable[Pair]) -> None:
        """Load what a claimed batch names (called off the event loop); adapters without I/O ignore it."""

    def get(self, tenant_id: str, name: str) -> str:
        raise NotImplementedError


class InMemorySecrets(SecretsProvider):
    """A fake for tests and development, keyed by (tenant id, name)."""

    def __init__(self, values: Mapping[Pair, str]) -> None:
        self._values = dict(values)

    def get(self, tenant_id: str, name: str) -> str:
        try:
            return self._values[(tenant_id, name)]
        except KeyError:
            raise SecretUnavailable("secret not found") from None


class TenantSecrets(SecretsProvider):
    """The tenant's stored secrets (one query per claimed batch), then its mounted namespace."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        load: Callable[[Iterable[Pair]], Mapping[Pair, str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._directory = directory or None
        self._load = load or (lambda pairs: secret_values(pairs=pairs))
        self._clock = clock
        # (tenant, name) -> (value or the reason it is unavailable, loaded at). Replaced whole by
        # prefetch (claim thread) and only read by get (event loop): no lock needed.
        self._loaded: dict[Pair, tuple[str | SecretUnavailable, float]] = {}

    def prefetch(self, pairs: Iterable[Pair]) -> None:
        wanted = {(tenant, name) for tenant, name in pairs if is_secret_ref(name)}
        if not wanted:
            return
        stored = self._load(wanted)
        now = self._clock()
        loaded = {pair: entry for pair, entry in self._loaded.items() if now - entry[1] < PREFETCH_SECONDS}
        for pair in wanted:
            loaded[pair] = (self._resolve(pair, stored.get(pair)), now)
        self._loaded = loaded

    def _resolve(self, pair: Pair, stored: str | None) -> str | SecretUnavailable:
        value = stored
        if value is None and self._directory is not None:
            try:
                value = read_mounted(self._directory, *pair)
            except MountedSecretUnreadable as exc:
                return SecretUnavailable(f"mounted secret unusable: {exc}")
        if value is None:
            return SecretUnavailable("secret not found")
        # Sent as a header value, by the API's rule for header values: a newline would inject headers.
        if len(value) > MAX_VALUE_BYTES or not is_header_value(value):
            return SecretUnavailable("secret is not one printable line")
        return value

    def get(self, tenant_id: str, name: str) -> str:
        entry = self._loaded.get((tenant_id, name))
        if entry is None:
            raise SecretUnavailable("secret not loaded for this claim")
        value = entry[0]
        if isinstance(value, SecretUnavailable):
            raise SecretUnavailable(str(value))
        return value
