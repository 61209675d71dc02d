"""Which request values are credentials, and masking them for display (the console, the audit trail of tasks).

A pure module: the support console shows what a task or a job sends, and what
its endpoint answered, without ever showing a credential it carries. A value
is masked when its name looks like a credential (a header, a query or form
parameter, a JSON key: `Authorization`, `token`, `api_key`, `sig`,
`X-Amz-Signature`, `password`, ...) or when the value itself does (`Bearer …`,
`Basic …`, a JWT), in URLs (userinfo and query), in headers, in JSON bodies
(URLs inside string fields included), in form-encoded bodies, and in plain
text (`name=value` pairs and URLs in it).

A tenant writes these bodies, so the work is bounded whatever they hold: every
pattern runs in time linear in the text (possessive quantifiers, and searches
that start only where a name or token starts: the old patterns restarted at
every character of a long run: quadratic; figures in docs/benchmarks-notes.md);
only the first BODY_LIMIT characters are masked and shown; JSON nested deeper
than JSON_DEPTH_LIMIT (or than the interpreter's stack) is masked as text.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlsplit, urlunsplit

MASK = "••••••"
# Characters masked and shown: a task's largest body (tasks.request_limits.MAX_BODY_BYTES); the
# executor keeps 4 KiB of a response. A longer body (written around the API) is cut.
BODY_LIMIT = 64 * 1024
# Containers deeper than this are masked as text: the walk below and json.dumps(indent=...) recurse
# once per level (a 1.2 KB body of nested arrays was a RecursionError, a 500).
JSON_DEPTH_LIMIT = 32
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
# Every pattern below is linear: `++`/`*+` never give back what they took, and a search that
# could start inside a run (of name or token characters) starts only where the run starts, so no
# run is scanned once per character of it.
# Values that are credentials whatever their name. A JWT starts a token: not after a letter,
# digit, `_` or `-` (from after every `-` of "-eyJ-eyJ..." the search ran to the run's end).
_CREDENTIAL_VALUE = re.compile(
    r"(?i)\b(?:bearer|basic|token)\s++[A-Za-z0-9._~+/=-]{6,}+"
    r"|(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]{5,}+\.[A-Za-z0-9_-]*+"
)
_URL_IN_TEXT = re.compile(r"https?://[^\s\"'<>]++", re.IGNORECASE)
_NAME_CHARS = r"A-Za-z0-9_.\-\[\]"
_NAME_AND_SEPARATOR = re.compile(rf"(?<![{_NAME_CHARS}])[\"']?(?P<name>[{_NAME_CHARS}]++)[\"']?\s*+[=:]\s*+")
# A quoted value left open (a body cut at BODY_LIMIT) runs to the end: masked, not shown in part.
_PAIR_VALUE = re.compile(r"\"[^\"]*+\"?|'[^']*+'?|[^\s&,;\"']++")
_FORM_BODY = re.compile(r"[^\s=&]++=[^\s&]*+(?:&[^\s=&]++=[^\s&]*+)*+")


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
        start = match.end()
        if start < len(text) and text[start] in "{[":
            end = _container_end(text, start)  # a credential's object or array (JSON masked as text): all of it
        else:
            value = _PAIR_VALUE.match(text, start)
            if value is None:
                continue
            end = value.end()
        out += [text[done:start], MASK]
        done = end
    return "".join(out) + text[done:]


def _container_end(text: str, start: int) -> int:
    """Where the `{...}` or `[...]` opening at `start` closes (brackets inside strings skipped); the end if never.

    One pass, no recursion: it serves JSON too deep to parse.
    """
    depth = 0
    quoted = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


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


class _TooDeep(Exception):
    """JSON nested deeper than JSON_DEPTH_LIMIT: masked as text instead."""


def _mask_json(value: Any, depth: int) -> Any:
    if isinstance(value, (dict, list)) and depth >= JSON_DEPTH_LIMIT:
        raise _TooDeep
    if isinstance(value, dict):
        return {key: MASK if is_secret_name(key) else _mask_json(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_mask_json(item, depth + 1) for item in value]
    if isinstance(value, str):
        return mask_value(value)
    return value


def _masked_json(body: str) -> str | None:
    """A JSON object or array, masked by key and value and pretty-printed; None for other or too deep bodies."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter's stack
        return None
    if not isinstance(parsed, (dict, list)):
        return None
    try:
        masked = _mask_json(parsed, 0)
    except _TooDeep:
        return None
    return json.dumps(masked, indent=2, ensure_ascii=False)


def _mask_text_body(body: str) -> str:
    stripped = body.strip()
    if _FORM_BODY.fullmatch(stripped):
        return _mask_query(stripped)
    return mask_value(body)


def _cut(text: str, limit: int) -> str:
    """The first `limit` characters, less the word the bound splits (it may be a credential's first part)."""
    head = text[:limit]
    if head[-1].isspace() or text[limit].isspace():
        return head
    words = head.rsplit(maxsplit=1)
    return words[0] if len(words) == 2 else ""


def mask_body(body: str | None) -> str:
    """A body with credentials masked: JSON (pretty-printed), form-encoded, or plain text; its first BODY_LIMIT
    characters only, the rest counted."""
    if not body:
        return ""
    if len(body) <= BODY_LIMIT:
        pretty = _masked_json(body)
        return pretty if pretty is not None else _mask_text_body(body)
    shown = _cut(body, BODY_LIMIT)
    left_out = len(body) - len(shown)
    return _mask_text_body(shown) + (
        f"\n… ({left_out} more characters not shown: the console shows the first {BODY_LIMIT})"
    )
