"""Name lookups at dial time, against a real DNS server of the test's own (tests.dns_server).

One tenant's names that never answer must not delay another tenant's call: each lookup has a
timeout of its own, holds no slot of the connection pool while it runs, and a tenant has only
so many lookups in flight. A name that failed is not asked again for a few seconds.
"""

from __future__ import annotations

import asyncio
import socket
import time

from outbound.client import ERROR_CONNECTION, DeliveryClient
from outbound.egress import GENERIC_MESSAGE, LookupUnfinished, NameNotFound, lookup_failure
from outbound.resolvers import AresResolver
from outbound.tenant_lookups import LookupLimits
from tests.dns_server import DnsServer
from tests.receivers import Receiver
from tests.workers import executor_helpers
from tests.workers.executor_helpers import claimed, policy_for

HOOKS_B = "hooks.tenant-b.test"


def _limits(dns: DnsServer, **overrides) -> LookupLimits:
    fields = {"nameservers": (dns.nameserver,), "timeout_seconds": 0.5, "per_tenant": 4, "negative_seconds": 5.0}
    fields.update(overrides)
    return LookupLimits(**fields)


def test_names_of_one_tenant_that_never_answer_do_not_delay_another_tenants_call():
    """Four hanging lookups once held every slot of a pool of four: tenant B's call timed out behind them."""
    with Receiver() as receiver, DnsServer({HOOKS_B: ["127.0.0.1"]}) as dns:

        async def main():
            client = DeliveryClient(
                policy=policy_for(f"127.0.0.1:{receiver.port}"),
                # c-ares pointed at our server, with no timeout of its own to speak of
                resolver=AresResolver(nameservers=[dns.nameserver], timeout=30, tries=1),
                lookups=_limits(dns, timeout_seconds=1.0),
                max_connections=4,
            )
            try:
                stuck = [
                    asyncio.ensure_future(
                        client.send(claimed(f"http://slow-{n}.hang.test:{receiver.port}/", timeout_seconds=3))
                    )
                    for n in range(4)
                ]
                await asyncio.sleep(0.2)  # tenant A's lookups are under way
                started = time.monotonic()
                b = await client.send(
                    claimed(f"http://{HOOKS_B}:{receiver.port}/b", tenant_id="tenant-b", timeout_seconds=2)
                )
                b_took = time.monotonic() - started
                return b, b_took, await asyncio.gather(*stuck)
            finally:
                await client.aclose()

        b, b_took, stuck = asyncio.run(main())
    assert b.http_status == 200, b  # was: error "timeout"
    assert b_took < 0.3  # B's own lookup and call only: A's hanging lookups hold nothing of B's
    assert {d.error for d in stuck} == {ERROR_CONNECTION}  # their own lookups timed out, not their calls


def test_a_tenant_has_at_most_its_cap_of_lookups_in_flight_and_the_rest_fail_at_once():
    with Receiver() as receiver, DnsServer() as dns:

        async def main():
            client = DeliveryClient(
                policy=policy_for(f"127.0.0.1:{receiver.port}"),
                lookups=_limits(dns, timeout_seconds=1.0, per_tenant=3),
            )
            try:
                started = time.monotonic()
                calls = [
                    asyncio.ensure_future(
                        client.send(claimed(f"http://n{n}.hang.test:{receiver.port}/", timeout_seconds=5))
                    )
                    for n in range(10)
                ]
                done, _ = await asyncio.wait(calls, timeout=0.5)
                early = [task.result() for task in done]
                asked_early = dns.asked_under(".hang.test")
                rest = await asyncio.gather(*calls)
                return early, asked_early, rest, time.monotonic() - started
            finally:
                await client.aclose()

        early, asked_early, rest, took = asyncio.run(main())
    assert len(asked_early) == 3  # three names asked; the seven over the cap never reached the server
    assert len(early) == 7 and {d.error for d in early} == {ERROR_CONNECTION}
    assert {d.error for d in rest} == {ERROR_CONNECTION}
    assert took < 2.0  # the lookup's timeout (1 s), not the calls' (5 s)


def test_a_name_that_does_not_exist_is_refused_and_not_asked_again_at_once():
    with Receiver() as receiver, DnsServer() as dns:

        async def main():
            client = DeliveryClient(
                policy=policy_for(f"127.0.0.1:{receiver.port}"),
                lookups=_limits(dns),
            )
            try:
                url = f"http://nowhere.tenant-a.test:{receiver.port}/"
                return [await client.send(claimed(url)) for _ in range(3)]
            finally:
                await client.aclose()

        deliveries = asyncio.run(main())
    assert {d.error for d in deliveries} == {GENERIC_MESSAGE}
    assert dns.asked("nowhere.tenant-a.test") <= 2  # one lookup (A and AAAA), then the negative cache


def test_a_lookup_that_timed_out_fails_fast_for_its_tenant_only():
    """A timeout (unlike a name that does not exist) says nothing about the name for other tenants."""
    with Receiver() as receiver, DnsServer() as dns:
        url = f"http://shared.hang.test:{receiver.port}/"

        async def main():
            client = DeliveryClient(
                policy=policy_for(f"127.0.0.1:{receiver.port}"), lookups=_limits(dns, timeout_seconds=0.5)
            )
            try:
                await client.send(claimed(url, tenant_id="tenant-a"))
                asked_after_a = dns.asked("shared.hang.test")
                started = time.monotonic()
                again_a = await client.send(claimed(url, tenant_id="tenant-a"))
                a_took = time.monotonic() - started
                asked_after_a_again = dns.asked("shared.hang.test")
                b = await client.send(claimed(url, tenant_id="tenant-b"))
                return asked_after_a, again_a, a_took, asked_after_a_again, b, dns.asked("shared.hang.test")
            finally:
                await client.aclose()

        asked_a, again_a, a_took, asked_again, b, asked_b = asyncio.run(main())
    assert again_a.error == ERROR_CONNECTION and a_took < 0.2  # remembered for tenant-a: failed at once
    assert asked_again == asked_a
    assert b.error == ERROR_CONNECTION and asked_b > asked_again  # tenant-b asked the server itself


def test_two_tenants_calling_one_name_at_once_look_it_up_each_under_their_own_cap():
    """A lookup shared across tenants ran under the first caller's cap: its refusal failed the others."""
    with Receiver() as receiver, DnsServer({HOOKS_B: ["127.0.0.1"]}) as dns:

        async def main():
            client = DeliveryClient(
                policy=policy_for(f"127.0.0.1:{receiver.port}"),
                lookups=_limits(dns, timeout_seconds=1.0, per_tenant=1),
            )
            try:
                # tenant-a spends its one lookup on a hanging name, then calls B's host too.
                hanging = asyncio.ensure_future(client.send(claimed(f"http://x.hang.test:{receiver.port}/")))
                await asyncio.sleep(0.1)
                a_call = asyncio.ensure_future(client.send(claimed(f"http://{HOOKS_B}:{receiver.port}/a")))
                await asyncio.sleep(0)
                b = await client.send(claimed(f"http://{HOOKS_B}:{receiver.port}/b", tenant_id="tenant-b"))
                return b, await a_call, await hanging
            finally:
                await client.aclose()

        b, a_call, _ = asyncio.run(main())
    assert b.http_status == 200, b  # not tenant-a's "too many lookups in flight"
    assert a_call.error == ERROR_CONNECTION


def test_every_address_a_name_resolves_to_is_still_vetted_at_connect():
    with Receiver() as receiver, DnsServer({"rebind.tenant-a.test": ["127.0.0.2"]}) as dns:
        delivery = executor_helpers.send(
            claimed(f"http://rebind.tenant-a.test:{receiver.port}/"),
            policy=policy_for(f"127.0.0.1:{receiver.port}"),  # 127.0.0.2 is not admitted
            lookups=_limits(dns),
        )
    assert delivery.error == GENERIC_MESSAGE
    assert receiver.received() == []


def test_the_c_ares_resolver_answers_as_aiohttps_did_for_the_same_names():
    """`resolvers.AresResolver` replaced aiohttp's `AsyncResolver`, whose import slowed every executor's start."""
    from aiohttp.resolver import AsyncResolver

    names = {
        "one.example.test": ["127.0.0.7"],
        "two.example.test": ["127.0.0.8", "127.0.0.9"],
        "v6.example.test": ["::1"],
    }
    with DnsServer(names) as dns:

        async def both(host, family):
            ours = AresResolver(nameservers=[dns.nameserver], timeout=1, tries=1)
            theirs = AsyncResolver(nameservers=[dns.nameserver], timeout=1, tries=1)
            try:
                return [await resolver.resolve(host, 8443, family) for resolver in (ours, theirs)]
            finally:
                await ours.close()
                await theirs.close()

        for host, family in [("one.example.test", socket.AF_INET), ("two.example.test", socket.AF_UNSPEC)]:
            ours, theirs = asyncio.run(both(host, family))
            assert ours == theirs
            assert sorted(answer["host"] for answer in ours) == sorted(names[host])
            assert {answer["port"] for answer in ours} == {8443}
        ours, theirs = asyncio.run(both("v6.example.test", socket.AF_INET6))
        assert ours == theirs


def test_a_name_the_c_ares_resolver_cannot_find_reads_not_found_and_a_silent_server_unfinished():
    with DnsServer() as dns:

        async def failure(host):
            resolver = AresResolver(nameservers=[dns.nameserver], timeout=0.3, tries=1)
            try:
                await resolver.resolve(host, 443, socket.AF_INET)
            except OSError as exc:
                return lookup_failure(exc)
            finally:
                await resolver.close()
            raise AssertionError(f"{host} resolved")

        assert isinstance(asyncio.run(failure("missing.example.test")), NameNotFound)
        assert isinstance(asyncio.run(failure("never.hang.test")), LookupUnfinished)
