"""An HTTP/1.1 request's head as bytes, written with the body on a pooled connection.

The head is what a mainstream client (aiohttp) writes for the same request (checked by the
tests): the request line with the URL's encoded path and query, `Host`, the task's and our
headers, `Accept`, `Accept-Encoding` and the framing (`Content-Length`; a body without a
`Content-Type` is `application/octet-stream`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from yarl import URL

from outbound.headers import is_forbidden, is_header_name, is_header_value

# Methods that carry no Content-Length without a body (aiohttp's rule: every other one sends 0).
NO_LENGTH_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})  # tasks.models.HttpMethod
# What aiohttp's writer refuses in a header line, CR and LF aside (they are counted: each line ends with one pair).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
BAD_HEADER = "a header name or value that would break the request"


@functools.lru_cache(maxsize=4096)
def parse_url(url: str) -> URL:
    """The job's URL parsed once per distinct URL (a task's URL repeats on every run; yarl's URL is immutable)."""
    return URL(url)


@functools.lru_cache(maxsize=4096)
def _request_line(method: str, url: URL) -> str:
    """`POST /path?q HTTP/1.1` and `Host`, once per (method, URL)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} not allowed")
    if url.scheme not in {"http", "https"} or not url.raw_host:
        raise ValueError("not an absolute http(s) URL")
    host = url.host_port_subcomponent
    # yarl keeps an odd host as given: never a control character or space in the request's head.
    if not host or _CONTROL.search(host) or any(char in host for char in " \t\r\n"):
        raise ValueError("not an absolute http(s) URL")
    return f"{method} {url.raw_path_qs} HTTP/1.1\r\nHost: {host}\r\n"


@functools.lru_cache(maxsize=256)
def _lowered(names: tuple[str, ...]) -> frozenset[str]:
    """Our headers' names, lower-cased, once per set of names (they are constants: a few sets in all)."""
    return frozenset(name.lower() for name in names)


@functools.lru_cache(maxsize=4096)
def _task_lines(headers: tuple[tuple[str, str], ...], ours_lower: frozenset[str]) -> tuple[str, frozenset[str]]:
    """The task's header lines and their lower-cased names, once per set of headers (a task's repeat).

    Every name and value as the API takes them (outbound.headers: a token, visible ASCII), else
    ValueError: a job written before that rule, or by hand, never sends a line the API would
    refuse. The names the API forbids (ours, the framing, hop-by-hop, Cookie, Proxy-*) and any of
    ours are left out: ours and the framing are this module's.
    """
    lines = []
    seen = set()
    for name, value in headers:
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(BAD_HEADER)
        if not is_header_name(name) or not is_header_value(value):
            raise ValueError(BAD_HEADER)
        lower = name.lower()
        if lower in ours_lower or is_forbidden(lower):
            continue
        seen.add(lower)
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines), frozenset(seen)


def request_head(
    method: str, url: URL, headers: Mapping[str, str], ours: Mapping[str, str], body_length: int | None
) -> bytes:
    """The request's head, up to and including the blank line; ValueError for a header that could inject.

    `headers` are the task's, `ours` the attempt's (`outbound.attempt_headers.our_headers`): ours win on a
    clash of names in any case (the API refuses one), as a CIMultiDict's update would decide.
    `body_length` None means no body.
    """
    task_text, seen = _task_lines(tuple(headers.items()), _lowered(tuple(ours)))
    ours_text = "".join([f"{name}: {value}\r\n" for name, value in ours.items()])
    # Ours are built per attempt (times, ids, the secret, the signature): one check of their joined
    # lines, not one per name and value: each line ends with the only CR LF it may hold.
    count = len(ours)
    if ours_text.count("\n") != count or ours_text.count("\r") != count or _CONTROL.search(ours_text):
        raise ValueError(BAD_HEADER)
    parts = [_request_line(method, url), task_text, ours_text]
    # As aiohttp's client asks (no brotli or zstd decoder installed: only what it can decode).
    if "accept" not in seen:
        parts.append("Accept: */*\r\n")
    if "accept-encoding" not in seen:
        parts.append("Accept-Encoding: gzip, deflate\r\n")
    if body_length is not None:
        parts.append(f"Content-Length: {body_length}\r\n")
        if "content-type" not in seen:
            parts.append("Content-Type: application/octet-stream\r\n")
    elif method not in NO_LENGTH_METHODS:
        parts.append("Content-Length: 0\r\n")
    parts.append("\r\n")
    return "".join(parts).encode("utf-8")
