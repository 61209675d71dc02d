"""An HTTP/1.1 request's head as bytes, for the aiohttp engine's send on a pooled connection.

The aiohttp engine writes this head and the body to a connection of aiohttp's own pool
(dialled by the vetted connector) and reads the answer with aiohttp's response parser: what
`ClientSession.request` costs around that (its request and response objects, the body writer's
task, the timer, traces, the cookie filter) was half of the executor's CPU per call. The head is
what aiohttp's request writes for ours (checked by the tests): the request line with the URL's
encoded path and query, `Host`, the task's and our headers, `Accept`, `Accept-Encoding` and the
framing (`Content-Length`; a body without a `Content-Type` is `application/octet-stream`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from multidict import CIMultiDict
from yarl import URL

# Methods that carry no Content-Length without a body (aiohttp's rule: every other one sends 0).
NO_LENGTH_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})  # tasks.models.HttpMethod
# The framing is ours: a task's own (the API refuses them; a job written before) is left out.
FRAMING = ("Host", "Content-Length", "Transfer-Encoding", "Connection")
_FRAMING_LOWER = frozenset(name.lower() for name in FRAMING)


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
    return f"{method} {url.raw_path_qs} HTTP/1.1\r\nHost: {url.host_port_subcomponent}\r\n"


def request_head(method: str, url: URL, headers: Mapping[str, str], body_length: int | None) -> bytes:
    """The request's head, up to and including the blank line; ValueError for a header that could inject.

    `headers` is case-insensitive (a CIMultiDict): the task's headers with ours applied over them.
    `body_length` None means no body.
    """
    if any(name in headers for name in FRAMING):
        headers = CIMultiDict((name, value) for name, value in headers.items() if name.lower() not in _FRAMING_LOWER)
    lines = "".join([f"{name}: {value}\r\n" for name, value in headers.items()])
    # One check of the joined lines, not one per name and value: each line ends with the only CR LF it may hold.
    if lines.count("\n") != len(headers) or lines.count("\r") != len(headers) or "\x00" in lines:
        raise ValueError("a header name or value that would break the request")
    parts = [_request_line(method, url), lines]
    # As aiohttp's client asks (no brotli or zstd decoder installed: only what it can decode).
    if "Accept" not in headers:
        parts.append("Accept: */*\r\n")
    if "Accept-Encoding" not in headers:
        parts.append("Accept-Encoding: gzip, deflate\r\n")
    if body_length is not None:
        parts.append(f"Content-Length: {body_length}\r\n")
        if "Content-Type" not in headers:
            parts.append("Content-Type: application/octet-stream\r\n")
    elif method not in NO_LENGTH_METHODS:
        parts.append("Content-Length: 0\r\n")
    parts.append("\r\n")
    return "".join(parts).encode("utf-8")
