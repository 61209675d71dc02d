"""Tests for outbound.egress.policy: the destination check at dial time, DNS at create time, the allowlist's holes."""

from __future__ import annotations

import pytest

from outbound.egress import (
    ALLOWED_PORTS,
    GENERIC_MESSAGE,
    Allowlist,
    EgressDenied,
    EgressPolicy,
    LookupUnfinished,
    TargetError,
)
from tests.tasks.egress_dns import POLICY, check, timing_out_resolve

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


def test_a_name_whose_lookup_times_out_is_never_taken_as_unresolved() -> None:
    # Accepting it would let a name that resolves to 127.0.0.1 through whenever DNS is slow or busy.
    with pytest.raises(LookupUnfinished):
        POLICY.check_url("https://public.example/", resolve=timing_out_resolve)


def test_a_name_that_does_not_exist_is_accepted_for_the_dial_time_check_to_decide() -> None:
    target = check("https://nowhere.example/")
    assert target.host == "nowhere.example"


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
