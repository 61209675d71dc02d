"""Special-purpose networks: which IP addresses are public enough to dial.

The rule is an explicit list of blocked networks (IANA special-purpose
registries plus cloud metadata), never Python's ``is_global``/``is_private``,
which disagree with it for CGNAT, NAT64, 6to4, Teredo, multicast and
IPv4-compatible IPv6. Translated IPv6 forms are also judged by the IPv4 they
embed. Anything that cannot be parsed is refused (fail closed).
"""

from __future__ import annotations

import functools
import ipaddress

__all__ = [
    "BLOCKED_NETWORKS",
    "IPV6_GLOBAL_UNICAST",
    "IPAddress",
    "IPNetwork",
    "embedded_ipv4_of",
    "is_public_address",
    "parse_address",
    "unmap",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


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


def parse_address(ip: object) -> IPAddress | None:
    """Parse strictly; None for anything that is not one plain address."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if isinstance(ip, ipaddress.IPv6Address):
        # A scoped address names an interface, not a destination.
        return None if ip.scope_id is not None else ip
    if type(ip) is str:
        return _parse_text(ip)
    return _parse_text.__wrapped__(ip) if isinstance(ip, str) else None


# A create's URL check and a call's dial-time vetting read the same few addresses again and again
# (each check reads its host up to seven times); an address object is immutable, so one parse
# serves them all. Exact `str` only (above): a subclass could compare equal to another text.
@functools.lru_cache(maxsize=4096)
def _parse_text(ip: str) -> IPAddress | None:
    if not ip or len(ip) > _MAX_ADDRESS_TEXT:
        return None
    if "%" in ip or not ip.isascii() or not all(c in "0123456789abcdefABCDEF.:" for c in ip):
        return None
    try:
        return ipaddress.ip_address(ip)
    except ValueError:
        return None


def unmap(addr: IPAddress) -> IPAddress:
    """The IPv4 of an IPv4-mapped IPv6 (``::ffff:a.b.c.d``); any other address as is."""
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
    addr = unmap(addr)
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id is not None or addr not in IPV6_GLOBAL_UNICAST:
            return False
        if any(addr in net for net in blocked if net.version == 6):
            return False
        return all(_is_public(v4, blocked) for v4 in _embedded_ipv4(addr))
    return not any(addr in net for net in blocked if net.version == 4)


def embedded_ipv4_of(addr: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses ``addr`` leads to when it is a translated IPv6 form (after unmapping)."""
    addr = unmap(addr)
    return _embedded_ipv4(addr) if isinstance(addr, ipaddress.IPv6Address) else []


def is_public_address(ip: object) -> bool:
    """True only for a plain, public, global-unicast address.

    Accepts ``str`` or an ``ipaddress`` address; IPv4-mapped IPv6 is unmapped
    first. Anything else (ints, bytes, None, scoped or padded text) is False.
    """
    try:
        addr = parse_address(ip)
        return addr is not None and _is_public(addr, BLOCKED_NETWORKS)
    except Exception:  # fail closed: a parser surprise must never admit
        return False
