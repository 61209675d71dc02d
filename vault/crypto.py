"""Secrets at rest: Fernet (AES-128-CBC + HMAC-SHA256) under keys that rotate.

SECRETS_ENCRYPTION_KEYS holds one or more Fernet keys, comma-separated: the
first encrypts, every one decrypts (MultiFernet), and `manage.py
rotate_secret_keys` re-encrypts every row under the first. The sealed
plaintext carries the tenant and the name, and opening checks them: a
ciphertext copied onto another tenant's row (by someone with write access to
the table) does not open there.
"""

from __future__ import annotations

import json
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretUnreadable(Exception):
    """The ciphertext does not open under any configured key, or belongs to another (tenant, name)."""


class SecretBox:
    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ValueError("at least one key is required")
        self._fernet = MultiFernet([Fernet(key) for key in keys])

    def seal(self, *, tenant_id: str, name: str, value: str) -> str:
        plaintext = json.dumps({"tenant": tenant_id, "name": name, "value": value}, separators=(",", ":"))
        return self._fernet.encrypt(plaintext.encode()).decode("ascii")

    def open(self, token: str, *, tenant_id: str, name: str) -> str:
        try:
            sealed = json.loads(self._fernet.decrypt(token.encode("ascii")))
        except (InvalidToken, ValueError, UnicodeError):
            raise SecretUnreadable("does not decrypt under SECRETS_ENCRYPTION_KEYS") from None
        if not isinstance(sealed, dict) or sealed.get("tenant") != tenant_id or sealed.get("name") != name:
            raise SecretUnreadable("sealed for another tenant or name")
        value = sealed.get("value")
        if not isinstance(value, str):
            raise SecretUnreadable("no value")
        return value

    def rotate(self, token: str) -> str:
        """The same secret under the first key (MultiFernet.rotate keeps the original timestamp)."""
        try:
            return self._fernet.rotate(token.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeError):
            raise SecretUnreadable("does not decrypt under SECRETS_ENCRYPTION_KEYS") from None


@lru_cache(maxsize=4)
def _box(keys: tuple[str, ...]) -> SecretBox:
    return SecretBox(list(keys))


def secret_box() -> SecretBox:
    """The box for settings.SECRETS_ENCRYPTION_KEYS (built once per value)."""
    return _box(tuple(settings.SECRETS_ENCRYPTION_KEYS))
