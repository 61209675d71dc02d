"""Signing secrets at rest: sealed with Fernet, and opened only for the (tenant, id) they were sealed for.

The sealed plaintext names the tenant and the secret's id, so a ciphertext
copied onto another row does not open there.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class SealUnreadable(Exception):
    """The ciphertext does not open, or was sealed for another tenant or id."""


@lru_cache(maxsize=4)
def _fernet(secret_key: str) -> Fernet:
    # Until the tenant-secrets vault (rotating SECRETS_ENCRYPTION_KEYS) is merged: a key derived from SECRET_KEY.
    digest = hashlib.sha256(b"jobsched signing secrets\0" + secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(*, tenant_id: str, secret_id: str, value: str) -> str:
    plaintext = json.dumps({"tenant": tenant_id, "id": secret_id, "value": value}, separators=(",", ":"))
    return _fernet(settings.SECRET_KEY).encrypt(plaintext.encode()).decode("ascii")


def unseal(token: str, *, tenant_id: str, secret_id: str) -> str:
    try:
        sealed = json.loads(_fernet(settings.SECRET_KEY).decrypt(token.encode("ascii")))
    except (InvalidToken, ValueError, UnicodeError):
        raise SealUnreadable("does not decrypt") from None
    if not isinstance(sealed, dict) or sealed.get("tenant") != tenant_id or sealed.get("id") != secret_id:
        raise SealUnreadable("sealed for another tenant or secret")
    value = sealed.get("value")
    if not isinstance(value, str):
        raise SealUnreadable("no value")
    return value
