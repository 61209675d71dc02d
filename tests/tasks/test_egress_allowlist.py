"""Tests for outbound.egress.allowlist: EGRESS_ALLOWLIST parsing and matching (pure, no Django)."""

from __future__ import annotations

import pytest

from outbound.egress.allowlist import Allowlist

# --------------------------------------------------------------------------
# Allowlist


def test_empty_setting_is_an_empty_allowlist() -> None:
    for text in ["", "   ", ","]:
        allowlist = Allowlist.parse(text)
        assert not allowlist
        assert allowlist == Allowlist.empty()
    assert "empty" in Allowlist.empty().describe()


def test_allowlist_parses_addresses_networks_ports_and_bracketed_ipv6() -> None:
    allowlist = Allowlist.parse(
        " 127.0.0.1:18080 , 10.0.0.0/8, [::1]:8080, [fd00::/8]:443, fd12::1, 192.168.1.0/24:80,"
    )
    assert bool(allowlist)
    assert [(str(e.network), e.port) for e in allowlist.entries] == [
        ("127.0.0.1/32", 18080),
        ("10.0.0.0/8", None),
        ("::1/128", 8080),
        ("fd00::/8", 443),
        ("fd12::1/128", None),
        ("192.168.1.0/24", 80),
    ]
    described = allowlist.describe()
    for text in ["127.0.0.1:18080", "10.0.0.0/8 (any port)", "[::1]:8080", "[fd00::/8]:443", "192.168.1.0/24:80"]:
        assert text in described


@pytest.mark.parametrize(
    "entry",
    [
        "localhost:18080",
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:http",
        "127.0.0.1:-1",
        "127.0.0.1:18080:1",
        "10.0.0.1/8",  # host bits set: ambiguous between a host and a network
        "10.0.0.0/33",
        "[127.0.0.1]:80",
        "[::1",
        "[::1]80",
        "[::1]:",
        "fe80::1%eth0",
        "[fe80::1%eth0]:443",
        "999.0.0.1",
        "127.1",
        "::1:zz",
    ],
)
def test_allowlist_rejects_bad_entries_naming_them(entry: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        Allowlist.parse(f"8.8.8.8, {entry}")
    assert repr(entry.strip()) in str(excinfo.value)


def test_allowlist_admits_exactly_the_listed_address_and_port() -> None:
    allowlist = Allowlist.parse("127.0.0.1:18080")
    assert allowlist.admits("127.0.0.1", 18080)
    assert allowlist.admits("::ffff:127.0.0.1", 18080)
    assert not allowlist.admits("127.0.0.1", 18081)
    assert not allowlist.admits("127.0.0.1", 80)
    assert not allowlist.admits("127.0.0.2", 18080)
    assert not allowlist.admits("not an ip", 18080)
    assert not allowlist.admits("127.0.0.1", "18080")


def test_allowlist_network_without_port_admits_any_port_inside_it() -> None:
    allowlist = Allowlist.parse("[fd00::/8], 172.18.0.0/16:9000")
    assert allowlist.admits("fd00:ec2::254", 1)
    assert allowlist.admits("fdff::1", 65535)
    assert not allowlist.admits("fe80::1", 80)
    assert allowlist.admits("172.18.3.4", 9000)
    assert not allowlist.admits("172.18.3.4", 9001)
