"""A fake DNS for the egress tests: names the policy resolves without a network."""

from __future__ import annotations

import socket

from outbound.egress import EgressPolicy, ParsedTarget

# Names the fake resolver knows; anything else raises like a failed lookup.
DNS: dict[str, list[str]] = {
    "public.example": ["93.184.215.14"],
    "public6.example": ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    "internal.example": ["10.0.0.5"],
    "loopback.example": ["127.0.0.1"],
    "metadata.example": ["169.254.169.254"],
    "mixed.example": ["93.184.215.14", "10.0.0.5"],
    "mixed-order.example": ["192.168.1.1", "93.184.215.14"],
    "ula.example": ["fd00:ec2::254"],
    "mapped.example": ["::ffff:10.0.0.1"],
    "nat64.example": ["64:ff9b::a00:1"],
    "garbage.example": ["not-an-address"],
    "127.0.0.1.nip.example": ["127.0.0.1"],
    "localhost": ["127.0.0.1", "::1"],
    "sink": ["172.18.0.7"],
    "empty.example": [],
}


def fake_resolve(host: str, port: int) -> list[str]:
    if host in DNS:
        return list(DNS[host])
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def timing_out_resolve(host: str, port: int) -> list[str]:
    raise TimeoutError("dns down")


POLICY = EgressPolicy()


def check(url: str, policy: EgressPolicy = POLICY) -> ParsedTarget:
    return policy.check_url(url, resolve=fake_resolve)
