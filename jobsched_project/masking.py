"""Which request values are credentials, and masking them for display (the admin of tasks and of jobs).

A pure module: the support console shows what a task or a job sends without
ever showing a credential it carries.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "••••••"
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie"}
_SECRET_FRAGMENTS = ("token", "secret", "key", "password", "passwd", "auth", "session", "signature", "credential")


def is_secret_name(name: str) -> bool:
    """A header, query parameter or JSON key whose value must never be shown."""
    lowered = str(name).lower()
    return lowered in _SECRET_HEADERS or any(fragment in lowered for fragment in _SECRET_FRAGMENTS)


def mask_headers(headers: Any) -> dict[str, str]:
    """The request headers with credential-looking values replaced by a mask."""
    if not isinstance(headers, dict):
        return {}
    return {str(name): MASK if is_secret_name(name) else str(value) for name, value in headers.items()}


def mask_url(url: str) -> str:
    """The URL with userinfo and credential-looking query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(name, MASK if is_secret_name(name) else value) for name, value in pairs], safe=MASK)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _mask_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: MASK if is_secret_name(key) else _mask_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask_json(item) for item in value]
    return value


def mask_body(body: str) -> str:
    """A JSON body with credential-looking keys masked (pretty-printed); other bodies as sent."""
    if not body:
        return ""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body
    if not isinstance(parsed, (dict, list)):
        return body
    return json.dumps(_mask_json(parsed), indent=2, ensure_ascii=False)
