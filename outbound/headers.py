"""Which request headers a task may send (RFC 9110 grammar plus our own refusals), and the ones we send.

Pure: the serializer calls `validate_headers` and turns `HeaderError` into a
400 on "http.headers". Credentials belong in `secret_ref`, framing headers
belong to the HTTP client, and the delivery headers are ours: `outbound/attempt_headers.py`
builds them by the names below (for the executor and the dry run alike), and the
API refuses every one of them, so a task's header is never silently replaced.
"""

from __future__ import annotations

import re

MAX_HEADERS = 32
MAX_NAME_LENGTH = 128
MAX_VALUE_LENGTH = 4096
MAX_TOTAL_BYTES = 16 * 1024

# RFC 9110 section 5.1: field-name = token; tchar as listed in section 5.6.2.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", re.ASCII)
# Section 5.5: visible ASCII, SP and HTAB inside, no leading/trailing whitespace.
# obs-text (bytes >= 0x80) is refused: clients disagree on how to encode it.
_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?", re.ASCII)

# The headers the executor sets on every delivery.
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"  # the job id: the receiver's dedup key
SCHEDULED_AT_HEADER = "X-Scheduled-At"
ATTEMPT_HEADER = "X-Attempt"
USER_AGENT_HEADER = "User-Agent"
# Set from the secret the task's secret_ref names, when it names one.
SECRET_HEADER = "Authorization"
# When we stop waiting for this attempt's answer (send time + the task's timeout).
DEADLINE_HEADER = "X-Deadline"
# Standard Webhooks signature headers (outbound/signature.py), set when the tenant has a signing secret.
SIGNATURE_ID_HEADER = "webhook-id"
SIGNATURE_TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
DELIVERY_HEADERS = (
    IDEMPOTENCY_KEY_HEADER,
    SCHEDULED_AT_HEADER,
    ATTEMPT_HEADER,
    USER_AGENT_HEADER,
    SECRET_HEADER,
    DEADLINE_HEADER,
    SIGNATURE_ID_HEADER,
    SIGNATURE_TIMESTAMP_HEADER,
    SIGNATURE_HEADER,
)

FORBIDDEN = frozenset(name.lower() for name in DELIVERY_HEADERS) | frozenset(
    {
        # credentials: use secret_ref (Authorization is a delivery header above)
        "cookie",
        "set-cookie",
        # the destination is the URL's host
        "host",
        # hop-by-hop and framing (RFC 9110 section 7.6.1, 8.6; RFC 9112 section 6)
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "expect",
    }
)
FORBIDDEN_PREFIXES = ("proxy-",)  # Proxy-Authorization, Proxy-Connection, ...


class HeaderError(ValueError):
    """A header set the API refuses; the message is tenant-facing."""


def is_forbidden(name: str) -> bool:
    lower = name.lower()
    return lower in FORBIDDEN or lower.startswith(FORBIDDEN_PREFIXES)


def is_header_name(name: str) -> bool:
    """Whether `name` may be sent as a header name: an RFC 9110 token."""
    return _TOKEN.fullmatch(name) is not None


def is_header_value(value: str) -> bool:
    """Whether `value` may be sent as a header value: one line, visible ASCII, no edge whitespace.

    Also the rule for the secret the executor sends as `Authorization`.
    """
    return _VALUE.fullmatch(value) is not None


def validate_headers(headers: object) -> dict[str, str]:
    """Return `headers` unchanged if every rule holds, else raise HeaderError."""
    if not isinstance(headers, dict):
        raise HeaderError("must be an object of header names to string values")
    if len(headers) > MAX_HEADERS:
        raise HeaderError(f"at most {MAX_HEADERS} headers")
    seen: set[str] = set()
    total = 0
    for name, value in headers.items():
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_LENGTH or not _TOKEN.fullmatch(name):
            raise HeaderError(f"{_show(name)} is not a valid header name (RFC 9110 token, at most {MAX_NAME_LENGTH})")
        if is_forbidden(name):
            raise HeaderError(f"{name!r} may not be set (credentials go in secret_ref; framing and delivery are ours)")
        if name.lower() in seen:
            raise HeaderError(f"{name!r} is given twice (header names are case-insensitive)")
        seen.add(name.lower())
        if not isinstance(value, str):
            raise HeaderError(f"{name!r}: value must be a string")
        if len(value) > MAX_VALUE_LENGTH:
            raise HeaderError(f"{name!r}: value longer than {MAX_VALUE_LENGTH} characters")
        if not is_header_value(value):
            raise HeaderError(
                f"{name!r}: value must be visible ASCII, spaces or tabs, with no CR, LF, NUL or edge whitespace"
            )
        total += len(name) + len(value) + 4  # ": " and CRLF
    if total > MAX_TOTAL_BYTES:
        raise HeaderError(f"headers total more than {MAX_TOTAL_BYTES} bytes")
    return headers


def _show(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 40 else text[:37] + "..."
