"""Credentials named by a task's `secret_ref`, resolved at send time.

A port (`SecretsProvider`) so tokens never sit in MySQL: the task stores only a
name. The default adapter reads a mounted directory (one file per secret, as
Kubernetes mounts a Secret) and falls back to the environment
(`JOBSCHED_SECRET_<NAME>`, the name upper-cased with non-alphanumerics as `_`).
The secret's value is sent as the `Authorization` header, e.g. `Bearer abc`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from tasks.headers import is_header_value
from tasks.secret_refs import is_secret_ref

ENV_PREFIX = "JOBSCHED_SECRET_"
MAX_SECRET_BYTES = 8192


def env_name(ref: str) -> str:
    """The environment variable that holds the secret `ref` names: `JOBSCHED_SECRET_<NAME>`."""
    return ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", ref).upper()


class SecretUnavailable(Exception):
    """The named secret does not exist or is unusable; the attempt fails (and retries)."""


class SecretsProvider:
    """Port: return the value of the secret named `ref`, or raise SecretUnavailable."""

    def get(self, ref: str) -> str:
        raise NotImplementedError


class InMemorySecrets(SecretsProvider):
    """A fake for tests and development."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)

    def get(self, ref: str) -> str:
        try:
            return self._values[ref]
        except KeyError:
            raise SecretUnavailable(ref) from None


class MountedSecrets(SecretsProvider):
    """Read `<directory>/<ref>`, else the environment variable for `ref`."""

    def __init__(self, directory: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> None:
        self._directory = Path(directory) if directory else None
        self._environ = os.environ if environ is None else environ

    def get(self, ref: str) -> str:
        # The API's grammar: a name, never a path (no separators, no "..", no hidden files).
        if not is_secret_ref(ref):
            raise SecretUnavailable("malformed secret_ref")
        value: str | None = None
        if self._directory is not None:
            try:
                raw = (self._directory / ref).read_bytes()[: MAX_SECRET_BYTES + 1]
                value = raw.decode("ascii")
            except FileNotFoundError:
                value = None
            except (OSError, UnicodeDecodeError) as exc:
                raise SecretUnavailable(f"unreadable secret: {type(exc).__name__}") from None
        if value is None:
            value = self._environ.get(env_name(ref))
        if value is None:
            raise SecretUnavailable("secret not found")
        value = value.strip()
        # Sent as a header value, by the API's rule for header values: a newline would inject headers.
        if not value or len(value) > MAX_SECRET_BYTES or not is_header_value(value):
            raise SecretUnavailable("secret is empty or not a single printable line")
        return value
