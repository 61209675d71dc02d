"""Tests for the egress (SSRF) policy: pure, no Django, fake resolvers."""

from __future__ import annotations

import ipaddress
import socket
import types

import pytest
import yarl
from hypothesis import given
from hypothesis import strategies as st

from tasks import egress
from tasks.egress import (
    ALLOWED_PORTS,
    BLOCKED_NETWORKS,
    GENERIC_MESSAGE,
    MAX_URL_LENGTH,
    Allowlist,
    EgressDenied,
    EgressPolicy,
    ParsedTarget,
    TargetError,
    _embedded_ipv4,
    _is_public,
    is_public_address,
)

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


# --------------------------------------------------------------------------
# EgressDenied, check_destination, vet_resolved


def test_egress_denied_shows_only_the_generic_message() -> None:
    with pytest.raises(EgressDenied) as excinfo:
        POLICY.check_destination("10.0.0.1", 443)
    assert str(excinfo.value) == GENERIC_MESSAGE == "destination not allowed"
    assert "10.0.0.1" in excinfo.value.reason
    assert "10.0.0.1" not in str(excinfo.value)


def test_public_address_on_allowed_ports_may_be_dialled() -> None:
    assert set(ALLOWED_PORTS) == {80, 443}
    POLICY.check_destination("8.8.8.8", 80)
    POLICY.check_destination("2001:4860:4860::8888", 443)


@pytest.mark.parametrize("port", [0, 22, 8080, 65535, 65536, -1, None, "443", True])
def test_other_ports_are_refused_at_dial_time(port: object) -> None:
    with pytest.raises(EgressDenied):
        POLICY.check_destination("8.8.8.8", port)


@pytest.mark.parametrize("address", ["10.0.0.1", "::ffff:169.254.169.254", "fe80::1%eth0", "garbage", "", None])
def test_blocked_or_unparseable_addresses_are_refused_at_dial_time(address: object) -> None:
    with pytest.raises(EgressDenied):
        POLICY.check_destination(address, 443)


def test_vet_resolved_returns_every_address_in_order_when_all_pass() -> None:
    addresses = ["8.8.4.4", "2001:4860:4860::8888", "8.8.8.8"]
    assert POLICY.vet_resolved("dns.example", 443, addresses) == addresses


@pytest.mark.parametrize(
    "addresses",
    [["8.8.8.8", "10.0.0.1"], ["127.0.0.1", "8.8.8.8"], ["8.8.8.8", "::ffff:192.168.0.1"], ["8.8.8.8", "bogus"], []],
)
def test_vet_resolved_refuses_the_whole_destination_if_any_address_is_blocked(addresses: list[str]) -> None:
    with pytest.raises(EgressDenied):
        POLICY.vet_resolved("rebind.example", 443, addresses)


def test_vet_resolved_checks_the_port() -> None:
    with pytest.raises(EgressDenied):
        POLICY.vet_resolved("public.example", 8443, ["8.8.8.8"])


@pytest.mark.parametrize("host", ["0x7f.1", "2130706433", "localhost", "metadata.google.internal", "intranet"])
def test_vet_resolved_refuses_ambiguous_or_internal_names_even_with_public_answers(host: str) -> None:
    with pytest.raises(EgressDenied):
        POLICY.vet_resolved(host, 443, ["8.8.8.8"])


def test_vet_resolved_accepts_an_ip_literal_host() -> None:
    assert POLICY.vet_resolved("8.8.8.8", 443, ["8.8.8.8"]) == ["8.8.8.8"]
    assert POLICY.vet_resolved("2001:4860:4860::8888", 80, ["2001:4860:4860::8888"]) == ["2001:4860:4860::8888"]


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


def test_policy_with_allowlist_admits_only_listed_destinations_at_dial_time() -> None:
    policy = EgressPolicy(Allowlist.parse("127.0.0.1:18080"))
    policy.check_destination("127.0.0.1", 18080)
    assert policy.vet_resolved("127.0.0.1", 18080, ["127.0.0.1"]) == ["127.0.0.1"]
    for ip, port in [("127.0.0.1", 18081), ("127.0.0.1", 80), ("10.0.0.1", 18080), ("8.8.8.8", 18080)]:
        with pytest.raises(EgressDenied):
            policy.check_destination(ip, port)
    policy.check_destination("8.8.8.8", 443)  # the ordinary rule still applies


def test_allowlisted_nat64_prefix_still_refuses_a_blocked_embedded_ipv4() -> None:
    policy = EgressPolicy(Allowlist.parse("[64:ff9b::/96]:443"))
    policy.check_destination("64:ff9b::808:808", 443)  # 8.8.8.8 through DNS64/NAT64
    with pytest.raises(EgressDenied):
        policy.check_destination("64:ff9b::a9fe:a9fe", 443)  # 169.254.169.254
    with pytest.raises(EgressDenied):
        policy.check_destination("64:ff9b::808:808", 8443)


# --------------------------------------------------------------------------
# check_url: refused

REFUSED_URLS = [
    "ftp://public.example/",
    "file:///etc/passwd",
    "gopher://public.example:70/_",
    "javascript:alert(1)",
    "ws://public.example/",
    "//public.example/",
    "public.example/path",
    "http:public.example",
    "http:///public.example",
    "https://user:pw@public.example/",
    "https://user@public.example/",
    "https://@public.example/",
    "https://:@public.example/",
    "http://public.example\\@10.0.0.1/",
    "https://public.example:22/",
    "https://public.example:8080/",
    "https://public.example:0/",
    "https://public.example:65536/",
    "https://public.example:443:80/",
    "https://unresolvable.example:8443/",
    "http://localhost/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://printer.local/",
    "http://intranet/",
    "http://127.0.0.1/",
    "http://127.0.0.1:443/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[0:0:0:0:0:ffff:7f00:1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://2130706433/",
    "http://017700000001/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://127.0.1/",
    "http://0/",
    "http://8.8.8.8./",
    "http://08.8.8.8/",
    "http://%31%32%37.0.0.1/",
    "http://①②⑦.0.0.1/",
    "http://127\u30020.0.1/",  # ideographic full stop: both parsers make it 127.0.0.1
    "http://[::ffff:0.0.0.0]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://172.31.255.254/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://100.100.100.200/",
    "http://198.18.0.1/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://[64:ff9b::a00:1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:a00:1::]/",
    "http://[2002:c0a8:101::1]/",
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
    "http://[::a00:1]/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[ff02::1]/",
    "http://[ff0e::1]/",
    "http://[2001:db8::1]/",
    "http://internal.example/",
    "http://loopback.example/",
    "http://metadata.example/",
    "http://mixed.example/",
    "http://mixed-order.example/",
    "http://ula.example/",
    "http://mapped.example/",
    "http://nat64.example/",
    "http://garbage.example/",
    "http://127.0.0.1.nip.example/",
    "http://public.example/#frag",
    "http://public.example/#",
    "http://public.example#@10.0.0.1/",
    "http://public .example/",
    "http://public.example/\t",
    "http://public.example/\x00",
    "http://exa_mple..example/",
    "http://-." + "a" * 300 + ".example/",
    "https://public.example/" + "a" * MAX_URL_LENGTH,
    "",
]


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_url_is_refused(url: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        check(url)
    assert excinfo.value.field == "http.url"
    assert not isinstance(excinfo.value, EgressDenied)


@pytest.mark.parametrize("url", ["http://10.0.0.1/", "http://internal.example/", "http://mixed.example/"])
def test_refusal_message_never_names_an_address(url: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        check(url)
    assert str(excinfo.value) == GENERIC_MESSAGE
    assert "10.0.0" not in str(excinfo.value)
    assert "10.0.0" in excinfo.value.reason


@pytest.mark.parametrize("url", [None, 42, b"http://public.example/"])
def test_non_string_url_is_refused(url: object) -> None:
    with pytest.raises(TargetError):
        POLICY.check_url(url, resolve=fake_resolve)  # type: ignore[arg-type]  # the wrong type is the point


@pytest.mark.parametrize("url", ["http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://8.8.8.8./"])
def test_numeric_hosts_are_refused_as_ambiguous_without_being_resolved(url: str) -> None:
    # getaddrinfo would read these as IPv4 (127.0.0.1), while both URL parsers keep them as names.
    def exploding_resolve(host: str, port: int) -> list[str]:
        raise AssertionError("numeric host sent to the resolver")

    with pytest.raises(TargetError, match="canonical IP address"):
        POLICY.check_url(url, resolve=exploding_resolve)


def test_a_url_the_two_parsers_read_differently_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real_url = egress.yarl.URL

    def skewed_url(url: str) -> yarl.URL:
        return real_url(url.replace("public.example", "other.example"))

    monkeypatch.setattr(egress, "yarl", types.SimpleNamespace(URL=skewed_url))
    with pytest.raises(TargetError) as excinfo:
        check("https://public.example/")
    assert "disagree" in excinfo.value.reason


def test_bad_port_says_which_ports_are_allowed() -> None:
    with pytest.raises(TargetError, match="80 or 443"):
        check("https://public.example:8080/")


# --------------------------------------------------------------------------
# check_url: accepted


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://8.8.8.8/", ParsedTarget("https", "8.8.8.8", 443, "https://8.8.8.8/")),
        ("http://8.8.8.8", ParsedTarget("http", "8.8.8.8", 80, "http://8.8.8.8")),
        (
            "https://[2001:4860:4860::8888]/x",
            ParsedTarget("https", "2001:4860:4860::8888", 443, "https://[2001:4860:4860::8888]/x"),
        ),
        (
            "https://public.example/hook?a=1",
            ParsedTarget("https", "public.example", 443, "https://public.example/hook?a=1"),
        ),
        ("https://Public.Example:443/", ParsedTarget("https", "public.example", 443, "https://public.example/")),
        ("HTTP://public.example/", ParsedTarget("http", "public.example", 80, "http://public.example/")),
        ("http://public.example:80/", ParsedTarget("http", "public.example", 80, "http://public.example/")),
        ("http://public6.example/", ParsedTarget("http", "public6.example", 80, "http://public6.example/")),
        ("https://public.example:80/", ParsedTarget("https", "public.example", 80, "https://public.example:80/")),
        (
            "https://unresolvable.example/",
            ParsedTarget("https", "unresolvable.example", 443, "https://unresolvable.example/"),
        ),
        ("https://empty.example/", ParsedTarget("https", "empty.example", 443, "https://empty.example/")),
        (
            "https://ñandú.example/",
            ParsedTarget("https", "xn--and-6ma2c.example", 443, "https://xn--and-6ma2c.example/"),
        ),
        ("https://[::ffff:8.8.8.8]/", ParsedTarget("https", "::ffff:808:808", 443, "https://[::ffff:8.8.8.8]/")),
    ],
)
def test_url_is_accepted_and_normalised(url: str, expected: ParsedTarget) -> None:
    assert check(url) == expected


def test_a_name_is_accepted_when_dns_times_out() -> None:
    target = POLICY.check_url("https://public.example/", resolve=timing_out_resolve)
    assert target.host == "public.example"


def test_check_url_passes_host_and_port_to_the_resolver() -> None:
    calls: list[tuple[str, int]] = []

    def recording_resolve(host: str, port: int) -> list[str]:
        calls.append((host, port))
        return ["8.8.8.8"]

    POLICY.check_url("http://Hook.Example/", resolve=recording_resolve)
    assert calls == [("hook.example", 80)]


def test_ip_literals_are_not_sent_to_the_resolver() -> None:
    def exploding_resolve(host: str, port: int) -> list[str]:
        raise AssertionError("resolver called for a literal")

    POLICY.check_url("https://8.8.8.8/", resolve=exploding_resolve)
    with pytest.raises(TargetError):
        POLICY.check_url("https://10.0.0.1/", resolve=exploding_resolve)


# --------------------------------------------------------------------------
# check_url with an allowlist


def test_allowlist_admits_the_listed_destination_at_create_time_and_nothing_more() -> None:
    policy = EgressPolicy(Allowlist.parse("127.0.0.1:18080"))
    assert check("http://127.0.0.1:18080/sink", policy).port == 18080
    for url in ["http://127.0.0.1:18081/", "http://127.0.0.1/", "http://10.0.0.1:18080/", "http://2130706433:18080/"]:
        with pytest.raises(TargetError):
            check(url, policy)


def test_allowlisted_name_overrides_the_name_rules_only_when_every_answer_is_allowlisted() -> None:
    policy = EgressPolicy(Allowlist.parse("172.18.0.0/16:9000"))
    assert check("http://sink:9000/", policy).host == "sink"
    with pytest.raises(TargetError):
        check("http://sink:9001/", policy)
    with pytest.raises(TargetError):
        check("http://sink/", policy)
    with pytest.raises(TargetError):
        check("http://unresolvable:9000/", policy)
    with pytest.raises(TargetError):  # localhost also answers ::1, which is not listed
        check("http://localhost:9000/", EgressPolicy(Allowlist.parse("127.0.0.1:9000")))
