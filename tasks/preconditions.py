"""ETag / If-Match and Idempotency-Key header rules for the task API (pure).

The ETag is the task's version, quoted ("7"). Weak tags never match (RFC 9110
section 13.1.1 requires the strong comparison for If-Match), and `*` is not
accepted: the point of If-Match here is to name the version the client read.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

MAX_IDEMPOTENCY_KEY_LENGTH = 255
_STRONG_TAG = re.compile(r'"(?P<version>[0-9]{1,10})"', re.ASCII)
# Visible ASCII and inner spaces: no control characters, and no edge whitespace,
# which MySQL's PAD SPACE collations would otherwise compare away.
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?", re.ASCII)
# The same rule for the OpenAPI schema (create and run now), so generated clients and fuzzers know it.
IDEMPOTENCY_KEY_SCHEMA = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_IDEMPOTENCY_KEY_LENGTH,
    "pattern": "^[!-~](?:[ -~]*[!-~])?$",
}


def etag(version: int) -> str:
    """The task's ETag: its version, quoted (strong, so If-Match may compare it)."""
    return f'"{version}"'


@dataclass(frozen=True)
class IfMatch:
    """The parsed header: `missing` (428), or the versions it names (empty: nothing can match, 412)."""

    missing: bool
    versions: tuple[int, ...] = ()


def parse_if_match(header: str | None) -> IfMatch:
    """Read If-Match; `*` counts as missing, since it would let a client skip naming what it read."""
    if header is None or not header.strip() or header.strip() == "*":
        return IfMatch(missing=True)
    versions = []
    for item in header.split(","):
        match = _STRONG_TAG.fullmatch(item.strip())
        if match is not None:
            versions.append(int(match["version"]))
        # weak, malformed or non-numeric tags match nothing
    return IfMatch(missing=False, versions=tuple(versions))


def idempotency_key_problem(key: str) -> str | None:
    """Why an Idempotency-Key header is refused, or None."""
    if not key:
        return "must not be empty"
    if len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
        return f"must be at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters"
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        return "must be visible ASCII characters (inner spaces allowed), with no control characters"
    return None


def request_sha256(data: Any) -> str:
    """SHA-256 of the canonical JSON of a parsed body: key order and whitespace do not matter."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()
