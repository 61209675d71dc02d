"""Egress (SSRF) policy: which destinations a tenant's HTTP task may reach.

One pure module, used twice: by the task API when a task is created or edited
(``EgressPolicy.check_url``) and by the executor inside its connector's
resolver, after DNS and right before ``connect()``
(``EgressPolicy.vet_resolved`` / ``check_destination``). The create-time check
alone loses to DNS rebinding; the dial-time check is the one that holds.

The rule is an explicit list of blocked networks (IANA special-purpose
registries plus cloud metadata), never Python's ``is_global``/``is_private``,
which disagree with it for CGNAT, NAT64, 6to4, Teredo, multicast and
IPv4-compatible IPv6. Translated IPv6 forms are also judged by the IPv4 they
embed. Anything that cannot be parsed is refused (fail closed).

Tenants only ever see ``GENERIC_MESSAGE``: the detail would map our network
for them. The internal ``reason`` is for logs.

This module must not import Django: callers read ``EGRESS_ALLOWLIST`` and pass
an ``Allowlist`` in.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import yarl

__all__ = [
    "ALLOWED_PORTS",
    "BLOCKED_NETWORKS",
    "GENERIC_MESSAGE",
    "MAX_URL_LENGTH",
    "Allowlist",
    "AllowlistEntry",
    "EgressDenied",
    "EgressPolicy",
    "ParsedTarget",
    "Resolver",
    "TargetError",
    "is_public_address",
    "resolve_host",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]

GENERIC_MESSAGE = "destination not allowed"
ALLOWED_PORTS = frozenset({80, 443})
ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_LENGTH = 2048
URL_FIELD = "http.url"


def _nets(*cidrs: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


BLOCKED_NETWORKS: tuple[IPNetwork, ...] = _nets(
    # IPv4 special-purpose registry (RFC 6890 and updates) and DESIGN.md.
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8",  # private
    "100.64.0.0/10",  # CGNAT shared space (also Alibaba metadata 100.100.100.200)
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local, incl. metadata 169.254.169.254
    "172.16.0.0/12",  # private
    "192.0.0.0/24",  # IETF protocol assignments (DS-Lite, PCP/TURN anycast, OCI 192.0.0.192)
    "192.0.2.0/24",  # TEST-NET-1
    "192.88.99.0/24",  # 6to4 relay anycast
    "192.168.0.0/16",  # private
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",  # TEST-NET-2
    "203.0.113.0/24",  # TEST-NET-3
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved
    "255.255.255.255/32",  # limited broadcast
    "168.63.129.16/32",  # Azure WireServer/IMDS host: public-looking, platform-internal
    # IPv6 special-purpose registry and DESIGN.md.
    "::/128",  # unspecified
    "::1/128",  # loopback
    "::/96",  # IPv4-compatible (deprecated)
    "::ffff:0:0/96",  # IPv4-mapped (unmapped before this list is consulted)
    "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
    "64:ff9b::/96",  # NAT64 well-known prefix
    "64:ff9b:1::/48",  # NAT64 local-use
    "100::/64",  # discard-only
    "2001::/23",  # IETF protocol assignments: Teredo, benchmarking, ORCHID, AMT, ...
    "2001:db8::/32",  # documentation
    "2002::/16",  # 6to4
    "3fff::/20",  # documentation
    "5f00::/16",  # SRv6 SIDs
    "fc00::/7",  # unique local, incl. AWS metadata fd00:ec2::254
    "fe80::/10",  # link-local
    "fec0::/10",  # site-local (deprecated)
    "ff00::/8",  # multicast
)

# IPv6 must also be global unicast: anything outside 2000::/3 is refused.
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")

_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
# RFC 6052 section 2.2: where the IPv4 sits for each NAT64 prefix length that
# fits inside the /48 local-use prefix (bits 64-71 are the reserved u octet).
_RFC6052_LAYOUTS: tuple[tuple[tuple[int, int], ...], ...] = (
    ((48, 16), (72, 16)),  # /48
    ((56, 8), (72, 24)),  # /56
    ((72, 32),),  # /64
    ((96, 32),),  # /96
)

# Longest textual IPv6 with an embedded IPv4 is 45 characters.
_MAX_ADDRESS_TEXT = 45


class EgressDenied(Exception):
    """A destination is refused.

    ``str()`` is always ``GENERIC_MESSAGE`` so it can reach a tenant as is;
    ``reason`` says why, for logs only (it may contain addresses).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(GENERIC_MESSAGE)
        self.reason = reason


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
# Addresses


def _parse_address(ip: object) -> IPAddress | None:
    """Parse strictly; None for anything that is not one plain address."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if isinstance(ip, ipaddress.IPv6Address):
        # A scoped address names an interface, not a destination.
        return None if ip.scope_id is not None else ip
    if not isinstance(ip, str) or not ip or len(ip) > _MAX_ADDRESS_TEXT:
        return None
    if "%" in ip or not ip.isascii() or not all(c in "0123456789abcdefABCDEF.:" for c in ip):
        return None
    try:
        return ipaddress.ip_address(ip)
    except ValueError:
        return None


def _unmap(addr: IPAddress) -> IPAddress:
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _bits(value: int, start: int, length: int) -> int:
    """Bits [start, start+length) of a 128-bit value, counting from the left."""
    return (value >> (128 - start - length)) & ((1 << length) - 1)


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses a translated IPv6 form leads to (empty if none)."""
    value = int(addr)
    found: list[ipaddress.IPv4Address] = []
    if addr in _NAT64_WELL_KNOWN or addr in _IPV4_COMPATIBLE or addr in _IPV4_TRANSLATED:
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    if addr in _NAT64_LOCAL_USE:
        # The operator picks the prefix length inside the /48: check every layout.
        for layout in _RFC6052_LAYOUTS:
            v4 = 0
            for start, length in layout:
                v4 = (v4 << length) | _bits(value, start, length)
            found.append(ipaddress.IPv4Address(v4))
    if addr in _SIX_TO_FOUR and addr.sixtofour is not None:
        found.append(addr.sixtofour)
    if addr.teredo is not None:
        server, client = addr.teredo  # client is already de-obfuscated
        found.extend((server, client))
    return found


def _is_public(addr: IPAddress, blocked: tuple[IPNetwork, ...]) -> bool:
    """Apply the rule against ``blocked``.

    The list is a parameter so tests can prove the embedded-IPv4 check holds
    even if a translation prefix is ever taken off the list.
    """
    addr = _unmap(addr)
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id is not None or addr not in IPV6_GLOBAL_UNICAST:
            return False
        if any(addr in net for net in blocked if net.version == 6):
            return False
        return all(_is_public(v4, blocked) for v4 in _embedded_ipv4(addr))
    return not any(addr in net for net in blocked if net.version == 4)


def _embedded_ipv4_of(addr: IPAddress) -> list[ipaddress.IPv4Address]:
    addr = _unmap(addr)
    return _embedded_ipv4(addr) if isinstance(addr, ipaddress.IPv6Address) else []


def is_public_address(ip: object) -> bool:
    """True only for a plain, public, global-unicast address.

    Accepts ``str`` or an ``ipaddress`` address; IPv4-mapped IPv6 is unmapped
    first. Anything else (ints, bytes, None, scoped or padded text) is False.
    """
    try:
        addr = _parse_address(ip)
        return addr is not None and _is_public(addr, BLOCKED_NETWORKS)
    except Exception:  # fail closed: a parser surprise must never admit
        return False


# --------------------------------------------------------------------------
# Allowlist


@dataclass(frozen=True)
class AllowlistEntry:
    """One ``EGRESS_ALLOWLIST`` entry; ``port`` None means any port."""

    network: IPNetwork
    port: int | None

    def admits(self, addr: IPAddress, port: int) -> bool:
        return addr in self.network and (self.port is None or self.port == port)

    def __str__(self) -> str:
        net = self.network
        full = net.prefixlen == net.max_prefixlen
        text = str(net.network_address) if full else str(net)
        if self.port is None:
            return f"{text} (any port)"
        return f"[{text}]:{self.port}" if net.version == 6 else f"{text}:{self.port}"


_BRACKETED = re.compile(r"\[(?P<addr>[^\[\]]+)\](?::(?P<port>[^:]*))?")


def _parse_port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 5:
        raise ValueError(f"bad port {text!r}")
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} out of range 1-65535")
    return port


def _parse_network(text: str, version: int) -> IPNetwork:
    if "%" in text:
        raise ValueError("scoped addresses are not allowed")
    # strict: "10.0.0.1/8" is a typo for a host or a network, refuse both readings.
    net = ipaddress.ip_network(text, strict=True)
    if net.version != version:
        raise ValueError(f"expected an IPv{version} address or network")
    return net


def _parse_entry(entry: str) -> AllowlistEntry:
    if entry.startswith("["):
        match = _BRACKETED.fullmatch(entry)
        if match is None:
            raise ValueError("expected [ipv6] or [ipv6]:port")
        port_text = match.group("port")
        port = None if port_text is None else _parse_port(port_text)
        return AllowlistEntry(_parse_network(match.group("addr"), 6), port)
    colons = entry.count(":")
    if colons == 0:
        return AllowlistEntry(_parse_network(entry, 4), None)
    if colons == 1:
        addr, port_text = entry.split(":")
        return AllowlistEntry(_parse_network(addr, 4), _parse_port(port_text))
    # Bare IPv6 (no brackets) cannot carry a port: "::1:80" is an address.
    return AllowlistEntry(_parse_network(entry, 6), None)


@dataclass(frozen=True)
class Allowlist:
    """Destinations admitted despite the policy (development, benchmarks).

    Parsed from ``EGRESS_ALLOWLIST``: comma-separated ``address[:port]`` or
    ``network/prefix[:port]``; IPv6 in brackets when a port is given
    (``[::1]:8080``, ``[fd00::/8]:443``). It admits exactly what is listed.
    """

    entries: tuple[AllowlistEntry, ...] = ()

    @classmethod
    def empty(cls) -> Allowlist:
        return cls()

    @classmethod
    def parse(cls, text: str) -> Allowlist:
        """Parse the setting; ``ValueError`` names the bad entry."""
        if not isinstance(text, str):
            raise ValueError(f"expected a string, got {type(text).__name__}")
        entries = []
        # Empty pieces (a trailing comma) admit nothing, so they are skipped.
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            try:
                entries.append(_parse_entry(entry))
            except ValueError as exc:
                raise ValueError(f"invalid entry {entry!r}: {exc}") from None
        return cls(tuple(entries))

    def admits(self, ip: object, port: object) -> bool:
        """Whether (ip, port) is listed; the unmapped form of ::ffff:a.b.c.d counts."""
        addr = _parse_address(ip)
        if addr is None or not isinstance(port, int) or isinstance(port, bool):
            return False
        forms = {addr, _unmap(addr)}
        return any(entry.admits(form, port) for entry in self.entries for form in forms)

    def describe(self) -> str:
        """One line for the loud startup log."""
        if not self.entries:
            return "egress allowlist is empty"
        listed = ", ".join(str(entry) for entry in self.entries)
        return f"egress allowlist admits {len(self.entries)} destination(s): {listed}"

    def __bool__(self) -> bool:
        return bool(self.entries)


_NO_ALLOWLIST = Allowlist.empty()


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


def _name_syntax_problem(host: str) -> str | None:
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


def _name_policy_problem(host: str) -> str | None:
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


_DNS_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="egress-dns")


def resolve_host(host: str, port: int, *, timeout: float = 2.0) -> list[str]:
    """Resolve with ``getaddrinfo`` under a timeout (``TimeoutError`` is an OSError).

    The lookup thread is left to finish on its own after a timeout;
    getaddrinfo cannot be cancelled.
    """
    future = _DNS_POOL.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        infos = future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        raise TimeoutError(f"resolving {host!r} timed out") from None
    return [str(info[4][0]) for info in infos]


# --------------------------------------------------------------------------
# Policy


def _literal_address(host: str) -> IPAddress | None:
    """The address a host is, if it is an IP literal as our parsers report it."""
    return _parse_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)


class EgressPolicy:
    """The egress rule, with an optional allowlist, for create and dial time."""

    def __init__(self, allowlist: Allowlist = _NO_ALLOWLIST) -> None:
        self.allowlist = allowlist

    def _admitted_by_allowlist(self, addr: IPAddress, port: int) -> bool:
        if not self.allowlist.admits(addr, port):
            return False
        # An allowlisted translation prefix (say NAT64 on an IPv6-only
        # cluster) must still not lead to a blocked IPv4.
        return all(is_public_address(v4) or self.allowlist.admits(v4, port) for v4 in _embedded_ipv4_of(addr))

    def check_destination(self, ip: object, port: object) -> None:
        """Raise ``EgressDenied`` unless the executor may connect to (ip, port)."""
        addr = _parse_address(ip)
        if addr is None:
            raise EgressDenied(f"unparseable address {ip!r}")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise EgressDenied(f"bad port {port!r}")
        if self._admitted_by_allowlist(addr, port):
            return
        if port not in ALLOWED_PORTS:
            raise EgressDenied(f"port {port} not allowed for {addr}")
        if not is_public_address(addr):
            raise EgressDenied(f"address {addr} is not public")

    def vet_resolved(self, host: str, port: int, addresses: list[str]) -> list[str]:
        """Return ``addresses`` (in order) if every one may be dialled.

        All or nothing: one refused answer refuses the whole destination,
        because a public+private mix is what a rebinding attack serves, and a
        client falls through to the next address when a connect fails.
        """
        if not addresses:
            raise EgressDenied(f"no addresses for {host!r}")
        for address in addresses:
            try:
                self.check_destination(address, port)
            except EgressDenied as exc:
                raise EgressDenied(f"{host!r} resolved to a refused destination: {exc.reason}") from None
        if _literal_address(host) is None:
            problem = _name_syntax_problem(host)
            if problem is None and not self._all_allowlisted(addresses, port):
                problem = _name_policy_problem(host)
            if problem is not None:
                raise EgressDenied(f"{host!r}: {problem}")
        return list(addresses)

    def _all_allowlisted(self, addresses: list[str], port: int) -> bool:
        vetted = [_parse_address(address) for address in addresses]
        return bool(vetted) and all(addr is not None and self._admitted_by_allowlist(addr, port) for addr in vetted)

    def check_url(self, url: str, *, resolve: Resolver = resolve_host) -> ParsedTarget:
        """Validate a task URL at create/edit time; raise ``TargetError``.

        Parsed by httpx and by yarl (what aiohttp dials with); any disagreement
        on scheme, host or port is refused, so the host we check is the host
        we connect to. A name that does not resolve is accepted (the dial-time
        check decides); one that resolves to any refused address is not.
        """
        if not isinstance(url, str) or not url:
            raise TargetError("must be a URL")
        if len(url) > MAX_URL_LENGTH:
            raise TargetError(f"must be at most {MAX_URL_LENGTH} characters")
        if any(c.isspace() or not c.isprintable() for c in url):
            raise TargetError("must not contain whitespace or control characters")
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
        port = h_url.port if h_url.port is not None else DEFAULT_PORTS[scheme]
        if y_port != port:
            raise TargetError("is not a valid URL", reason=f"parsers disagree on port: {port} vs {y_port}")
        if not 1 <= port <= 65535:
            raise TargetError("port must be 80 or 443")

        h_literal, y_literal = _literal_address(h_host), _literal_address(y_host)
        same_host = (
            h_literal == y_literal
            if h_literal is not None or y_literal is not None
            else h_host.lower() == y_host.lower()
        )
        if not same_host:
            raise TargetError("is not a valid URL", reason=f"parsers disagree on host: {h_host!r} vs {y_host!r}")

        if h_literal is not None:
            host = str(h_literal)
            self._check_addresses(host, port, [host])
            return ParsedTarget(scheme=scheme, host=host, port=port, url=str(h_url))
        host = h_host.lower()
        if ":" in host or "%" in host:
            raise TargetError("is not a valid URL", reason=f"unparseable IP literal {host!r}")
        problem = _name_syntax_problem(host)
        if problem is not None:
            raise TargetError("host must be a DNS name or a canonical IP address", reason=problem)

        try:
            addresses = list(resolve(host, port))
        except (OSError, UnicodeError, ValueError):
            addresses = []  # DNS may be down: the dial-time check decides
        problem = _name_policy_problem(host)
        if problem is not None and not self._all_allowlisted(addresses, port):
            raise TargetError(GENERIC_MESSAGE, reason=f"{host!r}: {problem}")
        if addresses:
            self._check_addresses(host, port, addresses)
        elif port not in ALLOWED_PORTS:
            raise TargetError("port must be 80 or 443", reason=f"{host!r} unresolved, port {port}")
        return ParsedTarget(scheme=scheme, host=host, port=port, url=str(h_url))

    def _check_addresses(self, host: str, port: int, addresses: list[str]) -> None:
        if port not in ALLOWED_PORTS and not self._all_allowlisted(addresses, port):
            raise TargetError("port must be 80 or 443", reason=f"{host!r} port {port}")
        try:
            for address in addresses:
                self.check_destination(address, port)
        except EgressDenied as exc:
            raise TargetError(GENERIC_MESSAGE, reason=f"{host!r}: {exc.reason}") from None


def _raw_authority(url: str) -> str:
    """The authority as typed, so an empty ``@`` that parsers drop is still seen."""
    _, sep, rest = url.partition("://")
    return re.split(r"[/?#\\]", rest, maxsplit=1)[0] if sep else ""
