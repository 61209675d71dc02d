"""Signing secrets at rest: sealed by the tenant-secrets vault (Fernet under rotating SECRETS_ENCRYPTION_KEYS).

The sealed plaintext names the tenant and `signing-secret:<id>`, so a ciphertext
copied onto another row (or into the tenant-secrets table) does not open there.
"""

from __future__ import annotations

from vault.crypto import SecretUnreadable, secret_box


class SealUnreadable(Exception):
    """The ciphertext does not open, or was sealed for another tenant or id."""


def _name(secret_id: str) -> str:
    return f"signing-secret:{secret_id}"


def seal(*, tenant_id: str, secret_id: str, value: str) -> str:
    return secret_box().seal(tenant_id=tenant_id, name=_name(secret_id), value=value)


def unseal(token: str, *, tenant_id: str, secret_id: str) -> str:
    try:
        return secret_box().open(token, tenant_id=tenant_id, name=_name(secret_id))
    except SecretUnreadable as exc:
        raise SealUnreadable(str(exc)) from None


def reseal(token: str) -> str:
    """The same secret under the first key (vault's rotation)."""
    try:
        return secret_box().rotate(token)
    except SecretUnreadable as exc:
        raise SealUnreadable(str(exc)) from None
