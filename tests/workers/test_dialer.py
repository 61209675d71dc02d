"""The dial-time egress check: rebinding, IP literals and resolver failures never reach a socket."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver

from outbound.client import ERROR_CONNECTION, DeliveryClient
from outbound.dialer import DialRefused, VettingResolver, vetted_socket_factory
from outbound.egress import GENERIC_MESSAGE, EgressDenied
from outbound.tenant_lookups import LookupLimits
from tests.receivers import ConnectionTrap, Receiver
from tests.workers.executor_helpers import claimed, policy_for, send

PUBLIC = "93.184.215.14"
NO_SUCH_NAME = socket.gaierror(socket.EAI_NONAME, "Name or service not known")


class ScriptedResolver(AbstractResolver):
    """Answers each lookup with the next scripted list of addresses (the last one repeats)."""

    def __init__(self, *answers: list[str] | OSError) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []

    def next_answer(self, host: str) -> list[str]:
        self.calls.append(host)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, OSError):
            raise answer
        return answer

    async def resolve(self, host, port=0, family=socket.AF_INET):
        return [
            {"hostname": host, "host": address, "port": port, "family": socket.AF_INET, "proto": 0, "flags": 0}
            for address in self.next_answer(host)
        ]

    async def close(self):
        pass


def test_a_name_that_rebinds_to_a_private_address_at_connect_time_is_blocked_before_any_connection(caplog):
    with ConnectionTrap(host="127.0.0.2") as private:
        resolver = ScriptedResolver([PUBLIC], ["127.0.0.2"])
        # Only the port is relaxed (for the public address), so the address is the sole reason to refuse.
        policy = policy_for(f"{PUBLIC}:{private.port}")
        url = f"http://hooks.example.com:{private.port}/hook"
        # Create time: the name answers a public address, so the task was accepted.
        assert policy.check_url(url, resolve=lambda host, port: resolver.next_answer(host))
        delivery = send(claimed(url), policy=policy, resolver=resolver)
    assert delivery.error == GENERIC_MESSAGE
    assert private.connections == 0
    assert resolver.calls == ["hooks.example.com", "hooks.example.com"]
    (refusal,) = [r for r in caplog.records if getattr(r, "event", None) == "egress_denied"]
    assert "for 127.0.0.2" in refusal.reason  # refused; the public answer on the same port was admitted


def test_an_answer_mixing_public_and_private_addresses_is_refused_whole():
    with ConnectionTrap(host="127.0.0.2") as private:
        resolver = ScriptedResolver([PUBLIC, "127.0.0.2"])
        policy = policy_for(f"{PUBLIC}:{private.port}")
        delivery = send(claimed(f"http://hooks.example.com:{private.port}/"), policy=policy, resolver=resolver)
    assert delivery.error == GENERIC_MESSAGE
    assert private.connections == 0


def test_an_ip_literal_skips_the_resolver_but_not_the_check(caplog):
    with ConnectionTrap() as private:
        delivery = send(claimed(f"http://127.0.0.1:{private.port}/"), policy=policy_for())
    assert delivery.error == GENERIC_MESSAGE
    assert private.connections == 0
    (refusal,) = [r for r in caplog.records if getattr(r, "event", None) == "egress_denied"]
    assert "127.0.0.1" in refusal.reason  # refused by the socket factory, right before connect()


def test_the_socket_factory_alone_stops_a_connection_the_resolver_did_not_vet():
    """Defence in depth: even a resolver that vets nothing cannot get a private address dialled."""
    with ConnectionTrap(host="127.0.0.2") as private:

        async def main():
            connector = aiohttp.TCPConnector(
                resolver=ScriptedResolver(["127.0.0.2"]), socket_factory=vetted_socket_factory(policy_for())
            )
            async with aiohttp.ClientSession(connector=connector) as session:
                await session.get(f"http://hooks.example.com:{private.port}/")

        with pytest.raises(aiohttp.ClientConnectorError) as caught:
            asyncio.run(main())
    assert isinstance(caught.value.__cause__, DialRefused)
    assert str(caught.value.__cause__) == GENERIC_MESSAGE
    assert private.connections == 0


def test_the_socket_factory_opens_a_socket_only_for_an_admitted_address_and_port():
    factory = vetted_socket_factory(policy_for("127.0.0.1:8080"))
    with factory((socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", 8080))) as sock:
        assert sock.family == socket.AF_INET
    for address in (("127.0.0.1", 8081), ("10.0.0.7", 443), ("169.254.169.254", 80)):
        with pytest.raises(DialRefused):
            factory((socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", address))
    with pytest.raises(DialRefused):
        factory((socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("::ffff:10.0.0.7", 443, 0, 0)))


def test_an_ipv4_mapped_ipv6_literal_is_judged_as_the_ipv4_it_maps():
    delivery = send(claimed("http://[::ffff:127.0.0.1]:80/"), policy=policy_for())
    assert delivery.error == GENERIC_MESSAGE


def test_a_name_that_does_not_resolve_fails_with_the_same_generic_error():
    resolver = ScriptedResolver(NO_SUCH_NAME)
    delivery = send(claimed("https://nowhere.example.com/"), policy=policy_for(), resolver=resolver)
    assert delivery.error == GENERIC_MESSAGE


def test_a_lookup_that_fails_without_an_answer_is_a_connection_failure_not_a_refusal():
    resolver = ScriptedResolver(OSError("resolver unreachable"))
    delivery = send(claimed("https://hooks.example.com/"), policy=policy_for(), resolver=resolver)
    assert delivery.error == ERROR_CONNECTION


def test_the_connector_dials_the_vetted_address_it_resolved_without_a_second_lookup():
    with Receiver() as receiver:
        resolver = ScriptedResolver(["127.0.0.1"], ["127.0.0.2"])  # a second lookup would get the trap's address
        policy = policy_for(f"127.0.0.1:{receiver.port}")
        delivery = send(claimed(f"http://hooks.example.com:{receiver.port}/hook"), policy=policy, resolver=resolver)
        assert delivery.http_status == 200
        assert resolver.calls == ["hooks.example.com"]
        (request,) = receiver.received("/hook")
        assert request.headers["Host"] == f"hooks.example.com:{receiver.port}"


def test_the_vetting_resolver_raises_egress_denied_for_a_private_answer():
    resolver = VettingResolver(policy_for(), ScriptedResolver(["10.0.0.7"]))
    with pytest.raises(EgressDenied) as caught:
        asyncio.run(resolver.resolve("hooks.example.com", 443))
    assert str(caught.value) == GENERIC_MESSAGE
    assert "10.0.0.7" in caught.value.reason  # for our logs only


def test_concurrent_dials_to_one_name_share_one_lookup_and_each_address_is_still_vetted():
    # 20 calls at once to one name: one lookup (as aiohttp's connector caches it); the second answer,
    # a private address, is never asked for within the cache's 10 s.
    with Receiver() as receiver:
        resolver = ScriptedResolver(["127.0.0.1"], ["127.0.0.2"])
        policy = policy_for(f"127.0.0.1:{receiver.port}")

        async def main():
            client = DeliveryClient(policy=policy, resolver=resolver)
            try:
                url = f"http://hooks.example.com:{receiver.port}/hook"
                return await asyncio.gather(*(client.send(claimed(url)) for _ in range(20)))
            finally:
                await client.aclose()

        deliveries = asyncio.run(main())
        assert [d.http_status for d in deliveries] == [200] * 20
        assert resolver.calls == ["hooks.example.com"]
        assert len(receiver.received("/hook")) == 20


def test_a_refused_lookup_is_not_cached_and_the_next_call_looks_again():
    with Receiver() as receiver:
        resolver = ScriptedResolver(NO_SUCH_NAME, ["127.0.0.1"])
        policy = policy_for(f"127.0.0.1:{receiver.port}")

        async def main():
            # The pool caches no refusal; the lookups' own short negative cache is off here.
            client = DeliveryClient(policy=policy, resolver=resolver, lookups=LookupLimits(negative_seconds=0))
            try:
                url = f"http://hooks.example.com:{receiver.port}/hook"
                return [await client.send(claimed(url)) for _ in range(2)]
            finally:
                await client.aclose()

        first, second = asyncio.run(main())
    assert first.error == GENERIC_MESSAGE
    assert second.http_status == 200
    assert resolver.calls == ["hooks.example.com", "hooks.example.com"]
