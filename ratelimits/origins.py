"""An origin (scheme, host, port) in its one written form: `https://example.com:443`.

Pure. The API stores a rate limit's origin in this form, and the executor's claim
computes each paced job's origin from its URL with the same function, so the two
meet on equal strings: the host lowercased (IDNA for a non-ASCII name), the port
always written (80 for http, 443 for https when the URL leaves it out).
"""

from __future__ import annotations

from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_ORIGIN_LENGTH = 300  # scheme, a 253-character host, a port


class OriginError(ValueError):
    """Not an http(s) origin; the message says why (a 400 naming `origin`)."""


def _host(hostname: str) -> str:
    if ":" in hostname:  # an IPv6 literal (urlsplit took its brackets off)
        return f"[{hostname}]"
    try:
        return hostname.encode("idna").decode("ascii")
    except UnicodeError:
        raise OriginError("not a valid host name") from None


def normalise_origin(value: str) -> str:
    """`value` (scheme://host[:port], nothing else) in the one form; OriginError if it is not one."""
    if not value or len(value) > MAX_ORIGIN_LENGTH or value != value.strip():
        raise OriginError(f"scheme://host[:port], at most {MAX_ORIGIN_LENGTH} characters")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise OriginError("not a URL origin (scheme://host[:port])") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise OriginError("only http and https origins")
    if parts.username is not None or parts.password is not None:
        raise OriginError("no user or password in an origin")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in value or "#" in value:
        raise OriginError("an origin has no path, query or fragment")
    if not parts.hostname:
        raise OriginError("a host is required")
    return f"{scheme}://{_host(parts.hostname)}:{port if port is not None else DEFAULT_PORTS[scheme]}"


def origin_of_url(url: str) -> str | None:
    """The origin of a job's request URL in the one form, or None when it has none (never raises)."""
    try:
        parts = urlsplit(url)
        port = parts.port
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS or not parts.hostname:
            return None
        return f"{scheme}://{_host(parts.hostname)}:{port if port is not None else DEFAULT_PORTS[scheme]}"
    except (ValueError, OriginError):
        return None
