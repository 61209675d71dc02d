"""``EGRESS_ALLOWLIST``: the destinations a development or benchmark setup admits despite the policy.

Parsed here, matched here; the policy (``outbound.egress.policy``) decides what an
admitted destination still may not do. Callers read the setting and pass an
``Allowlist`` in, so this module stays free of Django.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from outbound.egress.networks import IPAddress, IPNetwork, parse_address, unmap

__all__ = ["Allowlist", "AllowlistEntry"]


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
        addr = parse_address(ip)
        if addr is None or not isinstance(port, int) or isinstance(port, bool):
            return False
        forms = {addr, unmap(addr)}
        return any(entry.admits(form, port) for entry in self.entries for form in forms)

    def describe(self) -> str:
        """One line for the loud startup log."""
        if not self.entries:
            return "egress allowlist is empty"
        listed = ", ".join(str(entry) for entry in self.entries)
        return f"egress allowlist admits {len(self.entries)} destination(s): {listed}"

    def __bool__(self) -> bool:
        return bool(self.entries)
