"""Which request values are credentials, and masking them for display (the admin of tasks and of jobs).

A pure module: the support console shows what a task or a job sends, and what
its endpoint answered, without ever showing a credential it carries. A value
is masked when its name looks like a credential (a header, a query or form
parameter, a JSON key: `Authorization`, `token`, `api_key`, `sig`,
`X-Amz-Signature`, `password`, ...) or when the value itself does (`Bearer …`,
`Basic …`, a JWT), in URLs (userinfo and query), in headers, in JSON bodies
(at any depth, URLs inside string fields included), in form-encoded bodies,
and in plain text (`name=value` pairs and URLs in it).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlsplit, urlunsplit

MASK = "••••••"
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie"}
# Anywhere in a name ("X-Api-Key", "access_token", "client_secret").
_SECRET_FRAGMENTS = (
    "token",
    "secret",
    "key",
    "password",
    "passwd",
    "auth",
    "session",
    "signature",
    "credential",
    "private",
    "jwt",
    "bearer",
    "hmac",
)
# Whole words of a name only ("sig" and "x-sig", never "design" or "signal").
_SECRET_WORDS = {"sig", "pwd", "pass", "sas", "otp"}
_WORDS = re.compile(r"[a-z0-9]+")
# Values that are credentials whatever their name.
_CREDENTIAL_VALUE = re.compile(
    r"(?i)\b(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{6,}|\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
)
_URL_IN_TEXT = re.compile(r"https?://[^\s\"'<>]+", re.IGNORECASE)
_NAME_AND_SEPARATOR = re.compile(r"[\"']?(?P<name>[A-Za-z0-9_.\-\[\]]+)[\"']?\s*[=:]\s*")
_PAIR_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s&,;\"']+")
_FORM_BODY = re.compile(r"[^\s=&]+=[^\s&]*(?:&[^\s=&]+=[^\s&]*)*")


def is_secret_name(name: str) -> bool:
    """A header, query parameter or JSON key whose value must never be shown."""
    lowered = str(name).lower()
    if lowered in _SECRET_HEADERS or any(fragment in lowered for fragment in _SECRET_FRAGMENTS):
        return True
    return any(word in _SECRET_WORDS for word in _WORDS.findall(lowered))


def mask_value(value: str) -> str:
    """A free-text value with credentials in it masked: credential-shaped runs, URLs' secrets, name=value pairs."""
    text = _CREDENTIAL_VALUE.sub(MASK, value)
    text = _URL_IN_TEXT.sub(lambda match: mask_url(match.group()), text)
    return _mask_pairs(text)


def _mask_pairs(text: str) -> str:
    """`name=value` and `name: value` pairs in free text, the value masked when the name is a credential's."""
    out: list[str] = []
    done = 0
    # Only names are matched (never consuming a value), so "error: token=x" still finds "token".
    for match in _NAME_AND_SEPARATOR.finditer(text):
        if match.start() < done or not is_secret_name(match.group("name")):
            continue
        value = _PAIR_VALUE.match(text, match.end())
        if value is None:
            continue
        out += [text[done : match.end()], MASK]
        done = value.end()
    return "".join(out) + text[done:]


def mask_headers(headers: Any) -> dict[str, str]:
    """The request headers with credential-looking values replaced by a mask."""
    if not isinstance(headers, dict):
        return {}
    return {str(name): MASK if is_secret_name(name) else mask_value(str(value)) for name, value in headers.items()}


def _mask_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    # Joined by hand: urlencode would percent-encode the mask itself.
    return "&".join(
        f"{quote_plus(name)}={MASK if is_secret_name(name) else quote_plus(value)}" for name, value in pairs
    )


def mask_url(url: str) -> str:
    """The URL with userinfo and credential-looking query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query = _mask_query(parts.query) if parts.query else ""
    fragment = _mask_query(parts.fragment) if "=" in parts.fragment else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _mask_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: MASK if is_secret_name(key) else _mask_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask_json(item) for item in value]
    if isinstance(value, str):
        return mask_value(value)
    return value


def mask_body(body: str | None) -> str:
    """A body with credentials masked: JSON (pretty-printed), form-encoded, or plain text."""
    if not body:
        return ""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, (dict, list)):
        return json.dumps(_mask_json(parsed), indent=2, ensure_ascii=False)
    if _FORM_BODY.fullmatch(body.strip()):
        return _mask_query(body.strip())
    return mask_value(body)
