"""Tests for outbound.egress.networks: which addresses are public (pure, no Django)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from outbound.egress.networks import BLOCKED_NETWORKS, _embedded_ipv4, _is_public, is_public_address

# --------------------------------------------------------------------------
# is_public_address

BLOCKED_ADDRESSES = [
    "0.0.0.0",
    "0.1.2.3",
    "10.1.2.3",
    "100.64.0.1",  # CGNAT: Python says not private
    "100.100.100.200",  # Alibaba metadata, in CGNAT
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.9",  # Python says global (PCP anycast)
    "192.0.0.10",  # Python says global (TURN anycast)
    "192.0.0.192",  # OCI metadata
    "192.0.2.1",
    "192.88.99.1",
    "192.168.0.1",
    "198.18.0.1",
    "198.19.255.255",
    "198.51.100.7",
    "203.0.113.9",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "168.63.129.16",
    "::",
    "::1",
    "::a00:1",  # IPv4-compatible: Python says global
    "::808:808",  # IPv4-compatible even with a public IPv4
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:0:a00:1",  # IPv4-translated: Python says global
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1: Python says global
    "64:ff9b::808:808",  # NAT64 of a public IPv4 is still refused
    "64:ff9b:1::1",
    "100::1",
    "2001::1",  # Teredo
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:2::1",
    "2001:20::1",
    "2001:db8::1",
    "2002:a00:1::",  # 6to4 of 10.0.0.1: Python says global
    "2002:808:808::1",
    "3fff::1",  # documentation: Python says global
    "5f00::1",
    "fc00::1",
    "fd00:ec2::254",  # AWS metadata over IPv6
    "fe80::1",
    "fec0::1",
    "ff02::1",
    "ff0e::1",  # global-scope multicast: Python says global
    "4000::1",  # outside 2000::/3
    "1::1",
]

PUBLIC_ADDRESSES = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",  # just below CGNAT
    "100.128.0.0",  # just above CGNAT
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.1",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "::ffff:8.8.8.8",  # mapped public IPv4 is judged as that IPv4
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "2001:4860:4860::8888",
]


@pytest.mark.parametrize("address", BLOCKED_ADDRESSES)
def test_special_purpose_addresses_are_not_public(address: str) -> None:
    assert is_public_address(address) is False
    assert is_public_address(ipaddress.ip_address(address)) is False


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_ordinary_global_addresses_are_public(address: str) -> None:
    assert is_public_address(address) is True
    assert is_public_address(ipaddress.ip_address(address)) is True


@pytest.mark.parametrize(
    "value",
    [
        "fe80::1%eth0",
        ipaddress.IPv6Address("fe80::1%eth0"),
        ipaddress.IPv6Address("2001:4860::1%1"),
        " 8.8.8.8",
        "8.8.8.8 ",
        "8.8.8.8\n",
        "08.8.8.8",
        "8.8.8",
        "134744072",
        "0x8.0x8.0x8.0x8",
        "8.8.8.8/32",
        "[2001:4860::8888]",
        "8" * 100,
        "",
        134744072,
        b"8.8.8.8",
        None,
        True,
        8.8,
        ["8.8.8.8"],
        ipaddress.ip_network("8.8.8.0/24"),
    ],
)
def test_anything_that_is_not_one_plain_address_fails_closed(value: object) -> None:
    assert is_public_address(value) is False


def test_python_flags_disagree_with_the_policy_where_the_explicit_list_decides() -> None:
    # Guards the reason the list exists: if Python's flags ever agreed, this test
    # still documents the cases; the policy must not follow them.
    for text in ["64:ff9b::a00:1", "2002:a00:1::", "ff0e::1", "::a00:1", "192.0.0.9", "3fff::1"]:
        assert ipaddress.ip_address(text).is_global is True
        assert is_public_address(text) is False
    assert ipaddress.ip_address("100.64.0.1").is_private is False
    assert is_public_address("100.64.0.1") is False


def test_blocked_networks_cover_every_listed_range() -> None:
    listed = {str(net) for net in BLOCKED_NETWORKS}
    for cidr in ["100.64.0.0/10", "64:ff9b::/96", "64:ff9b:1::/48", "2001::/23", "2002::/16", "fc00::/7", "5f00::/16"]:
        assert cidr in listed


def test_embedded_ipv4_is_extracted_from_every_translated_form() -> None:
    ten = ipaddress.IPv4Address("10.0.0.1")
    assert ten in _embedded_ipv4(ipaddress.IPv6Address("64:ff9b::a00:1"))
    assert ten in _embedded_ipv4(ipaddress.IPv6Address("2002:a00:1::"))
    assert ten in _embedded_ipv4(ipaddress.IPv6Address("::a00:1"))
    assert ten in _embedded_ipv4(ipaddress.IPv6Address("::ffff:0:a00:1"))
    # NAT64 local-use /48 layout: bits 48-63 and 72-87 (u octet skipped).
    assert ten in _embedded_ipv4(ipaddress.IPv6Address("64:ff9b:1:a00:0:100::"))
    # NAT64 local-use /96 layout.
    assert ten in _embedded_ipv4(ipaddress.IPv6Address("64:ff9b:1::a00:1"))
    # Teredo: the client address is stored XOR 0xffffffff.
    teredo_client = int(ipaddress.IPv4Address("10.0.0.1")) ^ 0xFFFFFFFF
    teredo = ipaddress.IPv6Address((0x20010000 << 96) | (int(ipaddress.IPv4Address("8.8.8.8")) << 64) | teredo_client)
    assert ten in _embedded_ipv4(teredo)
    assert _embedded_ipv4(ipaddress.IPv6Address("2606:4700::1111")) == []


TRANSLATION_PREFIXES = {"::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "2001::/23"}
# The block list as if the translation prefixes were ever let through, with
# 2000::/3 kept as the only IPv6 rule: the embedded check must still refuse.
WITHOUT_TRANSLATION_PREFIXES = tuple(
    net for net in BLOCKED_NETWORKS if str(net) not in TRANSLATION_PREFIXES | {"2002::/16"}
)


def test_embedded_check_refuses_translated_forms_even_without_their_prefix_blocked() -> None:
    assert _is_public(ipaddress.IPv6Address("2002:a00:1::"), WITHOUT_TRANSLATION_PREFIXES) is False
    assert _is_public(ipaddress.IPv6Address("2002:808:808::1"), WITHOUT_TRANSLATION_PREFIXES) is True
    teredo_private = int(ipaddress.IPv4Address("192.168.0.1")) ^ 0xFFFFFFFF
    teredo = ipaddress.IPv6Address((0x20010000 << 96) | (int(ipaddress.IPv4Address("8.8.8.8")) << 64) | teredo_private)
    assert _is_public(teredo, WITHOUT_TRANSLATION_PREFIXES) is False


ipv4s = st.integers(min_value=0, max_value=2**32 - 1).map(ipaddress.IPv4Address)


@given(st.one_of(st.text(max_size=80), st.integers(), st.binary(max_size=40), st.none(), st.floats()))
def test_is_public_address_never_raises_on_arbitrary_input(value: object) -> None:
    assert is_public_address(value) in (True, False)


@given(st.text(alphabet="0123456789abcdefABCDEF.:%x[]/ ", max_size=50))
def test_is_public_address_never_raises_on_address_like_text(value: str) -> None:
    assert is_public_address(value) in (True, False)


@given(ipv4s)
def test_mapped_ipv4_is_judged_exactly_as_the_ipv4(v4: ipaddress.IPv4Address) -> None:
    assert is_public_address(f"::ffff:{v4}") == is_public_address(v4)


@given(ipv4s)
def test_translated_forms_of_a_blocked_ipv4_are_never_public(v4: ipaddress.IPv4Address) -> None:
    n = int(v4)
    global_unicast_forms = [
        ipaddress.IPv6Address((0x2002 << 112) | (n << 80) | 1),  # 6to4
        ipaddress.IPv6Address((0x20010000 << 96) | (0x08080808 << 64) | (n ^ 0xFFFFFFFF)),  # Teredo client
    ]
    other_forms = [
        ipaddress.IPv6Address((0x64FF9B << 96) | n),  # NAT64 well-known
        ipaddress.IPv6Address((0x0064FF9B0001 << 80) | n),  # NAT64 local-use /96
        ipaddress.IPv6Address(n),  # IPv4-compatible
        ipaddress.IPv6Address((0xFFFF << 32) | n),  # mapped
        ipaddress.IPv6Address((0xFFFF << 48) | n),  # IPv4-translated
    ]
    blocked = not is_public_address(v4)
    for form in global_unicast_forms + other_forms:
        if blocked:
            assert is_public_address(form) is False
            assert _is_public(form, WITHOUT_TRANSLATION_PREFIXES) is False
        assert (v4 in _embedded_ipv4(form)) is (form.ipv4_mapped is None)
    for form in global_unicast_forms:
        # Once the prefix itself is let through, only the embedded IPv4 decides.
        assert _is_public(form, WITHOUT_TRANSLATION_PREFIXES) is not blocked


def test_an_address_text_is_parsed_once_and_a_str_subclass_on_its_own():
    from outbound.egress.networks import parse_address

    assert parse_address("10.0.0.1") is parse_address("10.0.0.1")
    assert parse_address("::ffff:10.0.0.1") == ipaddress.ip_address("::ffff:10.0.0.1")

    class Text(str):
        def __eq__(self, other: object) -> bool:  # equal to anything: never a cache key
            return True

        __hash__ = str.__hash__

    assert parse_address(Text("10.0.0.2")) == ipaddress.ip_address("10.0.0.2")
    assert parse_address(Text("not an address")) is None
    assert parse_address("10.0.0.2 ") is None and parse_address("") is None and parse_address(None) is None
