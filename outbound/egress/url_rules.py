"""URL policy: what a task's URL may say, before any address is judged or any name resolved.

Scheme, credentials, fragment, port and host are read by httpx and by yarl
(what the executor's client dials with); any disagreement between the two refuses the URL,
so the host the policy checks is the host the executor connects to. Host
names are held to DNS syntax (a numeric last label is ambiguous) and a few
inward-only names are refused by name, as defence in depth.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import yarl

from outbound.egress.networks import IPAddress, parse_address

__all__ = [
    "ALLOWED_SCHEMES",
    "MAX_URL_LENGTH",
    "ParsedTarget",
    "TargetError",
    "literal_address",
    "name_policy_problem",
    "name_syntax_problem",
    "parse_task_url",
    "port_spelling_problem",
]

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_LENGTH = 2048
URL_FIELD = "http.url"


PORT_MESSAGE = "port must be 80 or 443"


class TargetError(ValueError):
    """A task's URL is refused at create/edit time; becomes a 400 on ``field``.

    Deliberately not an ``EgressDenied``: it is an input-validation error the
    API reports per field, and its message is tenant-facing (never an
    address). Refusals about the destination use ``GENERIC_MESSAGE``;
    ``reason`` carries the detail for logs.
    """

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = URL_FIELD
        self.reason = reason or message


@dataclass(frozen=True)
class ParsedTarget:
    """A URL accepted at create time. ``host`` is ASCII (IDNA), unbracketed."""

    scheme: str
    host: str
    port: int
    url: str


# --------------------------------------------------------------------------
# Host names

# Refused by name as defence in depth: they only ever lead inward, and a
# create-time resolver (or a DNS outage) might not show it.
_BLOCKED_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
_BLOCKED_SUFFIXES = (".localhost", ".local", ".localdomain", ".internal", ".home.arpa")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")


def name_syntax_problem(host: str) -> str | None:
    """Why a (non-IP) host name is malformed or ambiguous, or None.

    A numeric last label (``127.1``, ``2130706433``, ``0x7f.1``, ``8.8.8.8.``)
    makes the URL standard and ``inet_aton`` read the name as an IPv4 address
    while httpx and yarl keep it as a name: ambiguous, so always refused.
    """
    name = host.lower().removesuffix(".")
    labels = name.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        return "numeric host that is not a canonical IPv4 address"
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return "malformed host name"
    return None


def name_policy_problem(host: str) -> str | None:
    """Why a well-formed name is refused by name (defence in depth), or None.

    Single-label names resolve only through local search domains, and the
    listed names and suffixes only ever lead inward. An allowlist that admits
    every address the name resolves to overrides this (development setups
    name their sinks).
    """
    name = host.lower().removesuffix(".")
    if name in _BLOCKED_NAMES or name.endswith(_BLOCKED_SUFFIXES):
        return "internal host name"
    if "." not in name:
        return "single-label host name"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address a host is, if it is an IP literal as our parsers report it."""
    return parse_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)


# --------------------------------------------------------------------------
# URLs


def parse_task_url(url: object) -> ParsedTarget:
    """Read a task URL as both parsers do; raise ``TargetError`` for anything the URL itself gets wrong.

    What this leaves to the policy: whether the host (an IP literal, or the
    addresses a name resolves to) and the port may be dialled.
    """
    if type(url) is str and len(url) <= _KEPT_URL_LENGTH:
        return _parse_text(url)
    return _parse_text.__wrapped__(url)


# A tenant's tasks mostly call a few URLs, and reading one with both parsers is about a tenth of a
# create's own CPU; the answer depends on the text alone and is immutable, so one read serves every
# create of the same URL. A refused URL raises and is not kept. Exact `str` only (above): a subclass
# could compare equal to another text. Texts of at most 512 characters, 256 of them: with the
# percent-encoded URL each keeps, at most about 2 MB a process.
_KEPT_URL_LENGTH = 512


@functools.lru_cache(maxsize=256)
def _parse_text(url: object) -> ParsedTarget:
    if not isinstance(url, str) or not url:
        raise TargetError("must be a URL")
    if len(url) > MAX_URL_LENGTH:
        raise TargetError(f"must be at most {MAX_URL_LENGTH} characters")
    if any(c.isspace() or not c.isprintable() for c in url):
        raise TargetError("must not contain whitespace or control characters")
    # Imported here: only the API and the console check a whole URL this way (tasks.apps imports it
    # at their start). The executor, which dials with yarl and vets addresses, starts without httpx
    # (its package imports its command line's libraries too).
    import httpx

    try:
        h_url = httpx.URL(url)
        y_url = yarl.URL(url)
        h_host = h_url.raw_host.decode("ascii")
        y_host = y_url.raw_host or ""
        y_port = y_url.port
    except Exception as exc:  # any parser complaint refuses the URL
        raise TargetError("is not a valid URL", reason=f"parse error: {exc!r}") from None

    scheme = h_url.scheme.lower()
    if scheme not in ALLOWED_SCHEMES or y_url.scheme.lower() != scheme:
        raise TargetError("must be an http or https URL")
    if h_url.userinfo or y_url.user is not None or y_url.password is not None or "@" in _raw_authority(url):
        raise TargetError("must not contain credentials (use secret_ref)")
    # A fragment is never sent, so it is a mistake or a trick aimed at a
    # parser (``http://a.example#@b.example/``): refused rather than dropped.
    if "#" in url:
        raise TargetError("must not contain a fragment")
    if not h_host or not y_host:
        raise TargetError("must have a host")
    if (problem := port_spelling_problem(url)) is not None:
        raise TargetError(PORT_SPELLING_MESSAGE, reason=problem)
    port = h_url.port if h_url.port is not None else DEFAULT_PORTS[scheme]
    if y_port != port:
        raise TargetError("is not a valid URL", reason=f"parsers disagree on port: {port} vs {y_port}")
    if not 1 <= port <= 65535:
        raise TargetError(PORT_MESSAGE)

    h_literal, y_literal = literal_address(h_host), literal_address(y_host)
    same_host = (
        h_literal == y_literal if h_literal is not None or y_literal is not None else h_host.lower() == y_host.lower()
    )
    if not same_host:
        raise TargetError("is not a valid URL", reason=f"parsers disagree on host: {h_host!r} vs {y_host!r}")

    if h_literal is not None:
        return ParsedTarget(scheme=scheme, host=str(h_literal), port=port, url=str(h_url))
    host = h_host.lower()
    if ":" in host or "%" in host:
        raise TargetError("is not a valid URL", reason=f"unparseable IP literal {host!r}")
    problem = name_syntax_problem(host)
    if problem is not None:
        raise TargetError("host must be a DNS name or a canonical IP address", reason=problem)
    return ParsedTarget(scheme=scheme, host=host, port=port, url=str(h_url))


# A port as people write it: ASCII digits, no sign, no leading zero. httpx and yarl also read
# ":+443", ":0443", Arabic-Indic or full-width digits and an empty ":" as 443 (or the default),
# but another parser on the way (a proxy, a log scanner, a future client) may not: such
# spellings are refused, never normalised.
_CANONICAL_PORT = re.compile(r"[1-9][0-9]{0,4}", re.ASCII)
PORT_SPELLING_MESSAGE = "port must be plain ASCII digits without sign or leading zeros (e.g. :443), or left out"


def port_spelling_problem(url: str) -> str | None:
    """Why the port as typed in `url` is not canonical, or None (no port, or a canonical one)."""
    hostport = _raw_authority(url).rpartition("@")[2]
    if hostport.startswith("["):
        _, bracket, after = hostport.partition("]")
        if not bracket or not after:
            return None  # no port (an unclosed bracket is the parsers' to refuse)
        if not after.startswith(":"):
            return f"text after the IPv6 literal: {after!r}"
        text = after[1:]
    else:
        if ":" not in hostport:
            return None
        text = hostport.partition(":")[2]
    return None if _CANONICAL_PORT.fullmatch(text) else f"non-canonical port spelling {text!r}"


def _raw_authority(url: str) -> str:
    """The authority as typed, so an empty ``@`` that parsers drop is still seen."""
    _, sep, rest = url.partition("://")
    return re.split(r"[/?#\\]", rest, maxsplit=1)[0] if sep else ""
