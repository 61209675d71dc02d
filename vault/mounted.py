"""Operator-mounted secrets: `SECRETS_DIR/<tenant directory>/<name>`, one namespace per tenant.

A tenant id (1-64 of `A-Z a-z 0-9 - _ . : @`) becomes its directory name by
writing every character other than `A-Z a-z 0-9 - _ @` as `%XX` (its ASCII
code in upper-case hex): `acme` stays `acme`, `acme.io` is `acme%2Eio`, `..`
is `%2E%2E`, `org:eu` is `org%3Aeu`. `%` is not in the grammar, so the mapping
is one to one, and the result is never `.`, `..`, hidden, or a path with a
separator. Secret names (vault.rules) are plain file names already. The
directory must be on a case-sensitive file system (Linux, as Kubernetes mounts
a Secret), or `ACME` and `acme` would share one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from domain.tenants import is_valid_tenant_id
from vault.rules import MAX_VALUE_BYTES, is_valid_name

_ESCAPED = re.compile(r"[^A-Za-z0-9_@-]")


class MountedSecretUnreadable(Exception):
    """The file exists but cannot be used as a secret (unreadable, not one printable line)."""


def tenant_directory(tenant_id: str) -> str:
    """The directory name of `tenant_id` under SECRETS_DIR (see the module docstring)."""
    if not is_valid_tenant_id(tenant_id):
        raise ValueError("not a tenant id")
    return _ESCAPED.sub(lambda match: f"%{ord(match.group()):02X}", tenant_id)


def secret_path(directory: str | os.PathLike[str], tenant_id: str, name: str) -> Path | None:
    """Where the mounted secret `name` of `tenant_id` would be, or None for an id or name outside the grammar."""
    if not is_valid_tenant_id(tenant_id) or not is_valid_name(name):
        return None
    return Path(directory) / tenant_directory(tenant_id) / name


def read_mounted(directory: str | os.PathLike[str], tenant_id: str, name: str) -> str | None:
    """The value of the tenant's mounted secret `name`, None when there is none."""
    path = secret_path(directory, tenant_id, name)
    if path is None:
        return None
    try:
        raw = path.read_bytes()[: MAX_VALUE_BYTES + 2]
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise MountedSecretUnreadable(type(exc).__name__) from None
    try:
        value = raw.decode("ascii").strip()  # a mounted file usually ends with a newline
    except UnicodeDecodeError:
        raise MountedSecretUnreadable("not ASCII") from None
    if not value or len(value) > MAX_VALUE_BYTES:
        raise MountedSecretUnreadable("empty or too long")
    return value  # the executor holds it to the header-value rule before sending it
