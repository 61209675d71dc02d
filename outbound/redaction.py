"""Take the task's own credential out of a response body before it is kept (tokens never sit in MySQL).

An endpoint that echoes our request may hand the secret back in many
spellings: as sent, JSON-escaped, URL-encoded, or base64/base64url (alone, or
inside a larger encoded blob, at any of the three byte alignments). Each form
of the whole value ("Bearer abc") and of its token ("abc") is replaced.
Redaction runs on a window longer than the kept body by the longest form, and
the body is cut to its bound only afterwards, so a secret straddling the cut
is redacted whole rather than kept as a prefix.
"""

from __future__ import annotations

import base64
import json
from functools import lru_cache
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
# Shorter derived fragments (a short token alone, the inner part of an encoding) are left:
# replacing a 3-character run everywhere would mangle the body and hide little.
MIN_FRAGMENT = 6


def _base64_fragments(data: bytes) -> set[str]:
    """Runs of base64 that encode `data` alone, whatever its offset in a larger encoded message."""
    fragments: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        first = -(-8 * offset // 6)  # the first character made of `data`'s bits only
        last = (8 * offset + 8 * len(data)) // 6  # past the last such character
        inner = encoded[first:last]
        fragments.update((inner, inner.replace("+", "-").replace("/", "_")))
    fragments.update(
        (base64.b64encode(data).decode("ascii"), base64.urlsafe_b64encode(data).decode("ascii"))
    )  # with its padding
    return fragments


@lru_cache(maxsize=1024)
def secret_forms(secret: str) -> tuple[str, ...]:
    """Every spelling of `secret` to redact, longest first (so a longer one is never half-replaced)."""
    values = {secret}
    token = secret.partition(" ")[2]
    if token:
        values.add(token)
    forms: set[str] = set()
    for value in values:
        escaped = json.dumps(value)[1:-1]
        url = quote(value, safe="")
        forms.update((value, escaped, escaped.replace("/", "\\/"), url, quote_plus(value, safe="")))
        forms.add(_lower_hex(url))
        for text in {value, escaped}:
            forms.update(_base64_fragments(text.encode()))
    return tuple(sorted((form for form in forms if form == secret or len(form) >= MIN_FRAGMENT), key=len, reverse=True))


def _lower_hex(url_encoded: str) -> str:
    parts = url_encoded.split("%")
    return parts[0] + "".join("%" + part[:2].lower() + part[2:] for part in parts[1:])


def window_bytes(secret: str | None, limit: int) -> int:
    """How many body bytes to read so every form starting before `limit` is read whole."""
    if not secret:
        return limit
    return limit + max(len(form) for form in secret_forms(secret))


def redact(text: str, secret: str | None) -> str:
    """`text` with every form of `secret` replaced by REDACTED."""
    if not secret or not text:
        return text
    for form in secret_forms(secret):
        if form in text:
            text = text.replace(form, REDACTED)
    return text


def kept_body(raw: bytes, secret: str | None, limit: int) -> str:
    """Decode the read window, redact, and only then cut to `limit` bytes of UTF-8."""
    text = redact(raw.decode("utf-8", errors="replace"), secret)
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", errors="ignore")
