"""The `secret_ref` grammar: one rule for the API that stores the name and the executor that resolves it.

A name, never a path: 1-64 ASCII letters, digits, `.`, `_` and `-`, starting
with a letter or digit, so no separator, no `..` and no hidden file can reach
the mounted-secrets directory. It is the grammar of the tenant-owned secret
names to come (resolved by (tenant, name)), so a ref valid today stays valid.
"""

from __future__ import annotations

import re

MAX_SECRET_REF_LENGTH = 64
SECRET_REF = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_SECRET_REF_LENGTH - 1}}}", re.ASCII)
RULE = f"1-{MAX_SECRET_REF_LENGTH} letters, digits, '.', '_' or '-', starting with a letter or digit"


class SecretRefError(ValueError):
    """A `secret_ref` outside the grammar; the message is tenant-facing."""


def is_secret_ref(value: object) -> bool:
    """Whether `value` is a name the grammar admits."""
    return isinstance(value, str) and SECRET_REF.fullmatch(value) is not None


def validate_secret_ref(value: object) -> str:
    """Return `value` if the grammar admits it, else raise SecretRefError."""
    if not is_secret_ref(value):
        raise SecretRefError(f"must be {RULE}")
    assert isinstance(value, str)  # narrowed by is_secret_ref
    return value
