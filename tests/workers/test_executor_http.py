"""The executor's HTTP call against a real receiver on 127.0.0.1: statuses, headers, limits."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest

from outbound import redaction
from outbound.client import (
    ERROR_CONNECTION,
    ERROR_SECRET,
    ERROR_TIMEOUT,
    REDACTED,
    USER_AGENT,
    DeliveryClient,
    delivery_headers,
)
from outbound.egress import GENERIC_MESSAGE
from outbound.headers import DELIVERY_HEADERS, is_forbidden
from tests.receivers import ConnectionTrap, Receiver, gzip_bomb, unused_port
from tests.workers.executor_helpers import claimed, policy_for, send
from tests.workers.test_dialer import ScriptedResolver
from workers.executor.credentials import Credentials
from workers.executor.secrets import InMemorySecrets, TenantSecrets
from workers.executor.signing import SigningKeys


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


def _policy(receiver):
    return policy_for(f"127.0.0.1:{receiver.port}")


@pytest.mark.parametrize("code", [200, 201, 204, 302, 404, 500, 503])
def test_the_status_the_endpoint_answers_is_reported_as_is(receiver, code):
    delivery = send(claimed(receiver.url(f"/status/{code}")), policy=_policy(receiver))
    assert delivery.http_status == code
    assert delivery.error is None


def test_the_delivery_headers_and_the_tasks_own_headers_arrive(receiver):
    job = claimed(
        receiver.url("/hook"),
        attempt=2,
        headers={"X-Custom": "yes", "Content-Type": "application/json"},
        body='{"a": 1}',
    )
    send(job, policy=_policy(receiver))
    (request,) = receiver.received("/hook")
    assert request.method == "POST"
    assert request.body == b'{"a": 1}'
    assert request.headers["Idempotency-Key"] == str(job.id)
    assert request.headers["X-Attempt"] == "2"
    assert request.headers["X-Scheduled-At"] == job.scheduled_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    assert request.headers["User-Agent"] == USER_AGENT
    assert request.headers["X-Custom"] == "yes"
    assert request.headers["Content-Type"] == "application/json"
    assert "Authorization" not in request.headers


def test_every_header_the_executor_sets_is_one_the_api_refuses_a_task():
    job = claimed("http://127.0.0.1/", headers={"X-Custom": "yes"}, secret_ref="hook-token")
    signing = SigningKeys(load=lambda **_: {"tenant-a": [b"k" * 32]})  # signed, so every header is there
    signing.refresh(["tenant-a"])
    secrets = InMemorySecrets({("tenant-a", "hook-token"): "Bearer t"})
    secret, keys = Credentials(secrets=secrets, signing=signing).for_call(job)
    sent = delivery_headers(job, secret=secret, signing_keys=keys)
    ours = {name.lower() for name in sent} - {"x-custom"}
    assert ours == {name.lower() for name in DELIVERY_HEADERS}
    assert all(is_forbidden(name) for name in ours)


def test_the_secret_named_by_secret_ref_is_resolved_at_send_time_into_authorization(receiver):
    secrets = InMemorySecrets({("tenant-a", "hook-token"): "Bearer s3cret"})
    send(claimed(receiver.url("/hook"), secret_ref="hook-token"), policy=_policy(receiver), secrets=secrets)
    (request,) = receiver.received("/hook")
    assert request.headers["Authorization"] == "Bearer s3cret"


def test_a_secret_echoed_back_by_the_endpoint_is_redacted_before_it_could_be_stored(receiver):
    secrets = InMemorySecrets({("tenant-a", "hook-token"): "Bearer s3cret-token"})
    job = claimed(receiver.url("/echo-headers"), secret_ref="hook-token")
    delivery = send(job, policy=_policy(receiver), secrets=secrets)
    assert delivery.http_status == 200
    assert str(job.id) in delivery.response_body  # the echo really came back
    assert "s3cret-token" not in delivery.response_body
    assert f": {REDACTED}" in delivery.response_body


def test_a_missing_secret_fails_the_attempt_without_calling_and_tells_the_operator(receiver, caplog):
    delivery = send(
        claimed(receiver.url("/hook"), secret_ref="absent"), policy=_policy(receiver), secrets=InMemorySecrets({})
    )
    assert delivery.error == ERROR_SECRET
    assert receiver.received() == []
    (record,) = [r for r in caplog.records if getattr(r, "event", None) == "secret_unavailable"]
    assert record.secret_ref == "absent"


def test_a_secret_value_never_reaches_the_logs(receiver, tmp_path, caplog):
    (tmp_path / "tenant-a").mkdir()
    (tmp_path / "tenant-a" / "tok").write_text("Bearer leaked-value\nX-Injected: 1")
    secrets = TenantSecrets(tmp_path, load=lambda pairs: {})
    secrets.prefetch([("tenant-a", "tok")])
    delivery = send(claimed(receiver.url("/hook"), secret_ref="tok"), policy=_policy(receiver), secrets=secrets)
    assert delivery.error == ERROR_SECRET
    assert caplog.records
    assert all("leaked-value" not in record.getMessage() + str(record.__dict__) for record in caplog.records)


def test_redirects_are_not_followed(receiver):
    delivery = send(claimed(receiver.url("/status/302")), policy=_policy(receiver))
    assert delivery.http_status == 302
    assert receiver.received("/landed") == []


def test_a_slow_endpoint_times_out_at_the_tasks_timeout(receiver):
    delivery = send(claimed(receiver.url("/slow/5"), timeout_seconds=1), policy=_policy(receiver))
    assert delivery.http_status is None
    assert delivery.error == ERROR_TIMEOUT


def test_the_timeout_covers_a_body_that_trickles_in_after_quick_headers(receiver):
    delivery = send(claimed(receiver.url("/trickle/3"), timeout_seconds=1), policy=_policy(receiver))
    assert delivery.error == ERROR_TIMEOUT


def test_a_refused_connection_fails_with_a_text_that_names_no_address():
    port = unused_port()
    delivery = send(claimed(f"http://127.0.0.1:{port}/hook"), policy=policy_for(f"127.0.0.1:{port}"))
    assert delivery.error == ERROR_CONNECTION
    assert "127.0.0.1" not in delivery.error


def test_the_response_body_is_read_only_up_to_the_bound(receiver):
    delivery = send(claimed(receiver.url("/big/1000000")), policy=_policy(receiver), body_limit=100)
    assert delivery.http_status == 200
    assert delivery.response_body == "x" * 100


def test_proxy_environment_variables_are_ignored(receiver, monkeypatch):
    with ConnectionTrap() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        delivery = send(claimed(receiver.url("/hook")), policy=_policy(receiver))
    assert delivery.http_status == 200
    assert len(receiver.received("/hook")) == 1
    assert proxy.connections == 0


def test_a_destination_outside_the_allowlist_is_refused_with_the_generic_error(receiver):
    delivery = send(claimed(receiver.url("/hook")), policy=policy_for())
    assert delivery.error == GENERIC_MESSAGE
    assert receiver.received() == []


def test_another_tenants_secret_of_the_same_name_is_never_sent(receiver):
    secrets = InMemorySecrets({("tenant-b", "hook-token"): "Bearer of-tenant-b"})
    delivery = send(
        claimed(receiver.url("/hook"), tenant_id="tenant-a", secret_ref="hook-token"),
        policy=_policy(receiver),
        secrets=secrets,
    )
    assert delivery.error == ERROR_SECRET
    assert receiver.received() == []


def test_a_cookie_set_for_one_tenants_call_is_not_sent_with_the_next_call(receiver):
    """One client serves every tenant: a jar would carry tenant A's session into tenant B's call."""

    async def main():
        client = DeliveryClient(policy=_policy(receiver))
        try:
            first = await client.send(claimed(receiver.url("/set-cookie/tenant-a-session"), tenant_id="tenant-a"))
            second = await client.send(claimed(receiver.url("/echo-headers"), tenant_id="tenant-b"))
        finally:
            await client.aclose()
        return first, second

    first, second = asyncio.run(main())
    assert (first.http_status, second.http_status) == (200, 200)
    (_set_request,) = receiver.received("/set-cookie/tenant-a-session")
    (echo_request,) = receiver.received("/echo-headers")
    assert "Cookie" not in echo_request.headers
    assert "tenant-a-session" not in second.response_body


def test_a_cookie_for_a_host_name_is_not_kept_either(receiver):
    """aiohttp's default jar already ignores cookies of IP literals; a named host is where it would keep one."""
    resolver = ScriptedResolver(["127.0.0.1"])
    policy = _policy(receiver)

    async def main():
        client = DeliveryClient(policy=policy, resolver=resolver)
        try:
            await client.send(claimed(f"http://hooks.example.com:{receiver.port}/set-cookie/a-session"))
            return await client.send(claimed(f"http://hooks.example.com:{receiver.port}/echo-headers"))
        finally:
            await client.aclose()

    delivery = asyncio.run(main())
    assert delivery.http_status == 200
    (echo_request,) = receiver.received("/echo-headers")
    assert "Cookie" not in echo_request.headers


def test_a_compressed_answer_is_decompressed_only_up_to_the_bound(receiver):
    bomb = gzip_bomb(64)  # built before measuring: 64 MiB of zeros, ~64 KiB on the wire
    tracemalloc.start()
    try:
        delivery = send(claimed(receiver.url("/gzip-bomb/64")), policy=_policy(receiver))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(bomb) < 1024 * 1024
    assert delivery.http_status == 200
    assert delivery.response_body == "\0" * 4096
    assert peak < 4 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB while reading a 64 MiB gzip answer"


def test_a_gzip_answer_is_kept_decoded(receiver):
    delivery = send(claimed(receiver.url("/gzip-bomb/1")), policy=_policy(receiver), body_limit=10)
    assert delivery.response_body == "\0" * 10


SECRET = 'Bearer s3cr3t/t0ken+with="odd"&chars\\x'


@pytest.mark.parametrize("form", ["raw", "json", "url", "base64", "base64url", "blob"])
def test_a_secret_echoed_in_an_encoded_form_is_redacted(receiver, form):
    secrets = InMemorySecrets({("tenant-a", "hook-token"): SECRET})
    delivery = send(
        claimed(receiver.url(f"/echo-secret/{form}"), secret_ref="hook-token"),
        policy=_policy(receiver),
        secrets=secrets,
    )
    assert delivery.http_status == 200
    body = delivery.response_body
    assert REDACTED in body, body
    for spelling in redaction.secret_forms(SECRET):
        assert spelling not in body, (spelling, body)
    assert "s3cr3t" not in body and "czNjcjN0" not in body  # nor the token's base64 at any alignment


@pytest.mark.parametrize("cut", [1, 7, len(SECRET) // 2, len(SECRET) - 1])
def test_a_secret_cut_by_the_body_limit_is_redacted_not_kept_as_a_prefix(receiver, cut):
    secrets = InMemorySecrets({("tenant-a", "hook-token"): SECRET})
    offset = 4096 - cut  # the secret starts `cut` bytes before the 4 KiB limit
    delivery = send(
        claimed(receiver.url(f"/echo-secret-at/{offset}"), secret_ref="hook-token"),
        policy=_policy(receiver),
        secrets=secrets,
    )
    body = delivery.response_body
    assert len(body.encode()) <= 4096
    assert body.startswith("p" * offset)
    assert SECRET[:cut] not in body[offset:]
    assert body[offset:] == (REDACTED + "\nend")[:cut]


@pytest.mark.parametrize("spelling", ["+{port}", "0{port}", ""])
def test_a_job_url_with_a_non_canonical_port_is_refused_at_dial_time(receiver, spelling):
    """Jobs written before the API refused these spellings are not dialled either."""
    url = f"http://127.0.0.1:{spelling.format(port=receiver.port)}/hook"
    delivery = send(claimed(url), policy=_policy(receiver))
    assert delivery.error == GENERIC_MESSAGE
    assert receiver.received() == []


def _warm_then_send(jobs, **client_kwargs):
    """Warm the jobs' connections, then send them all at once, on one client: (held by warm, deliveries)."""

    async def main():
        client = DeliveryClient(**client_kwargs)
        try:
            warmed = await client.warm(jobs, within=5.0)
            return warmed, await asyncio.gather(*(client.send(job) for job in jobs))
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_warming_opens_one_connection_per_claimed_job_that_the_calls_then_reuse(receiver):
    jobs = [claimed(receiver.url("/warm")) for _ in range(5)]
    warmed, deliveries = _warm_then_send(jobs, policy=_policy(receiver))
    assert warmed == 5
    assert [delivery.http_status for delivery in deliveries] == [200] * 5
    assert len(receiver.received("/warm")) == 5
    assert receiver.connections == 5  # no call dialled a connection of its own


def test_warming_opens_no_more_connections_than_the_pool_allows(receiver):
    jobs = [claimed(receiver.url("/warm")) for _ in range(5)]
    warmed, deliveries = _warm_then_send(jobs, policy=_policy(receiver), max_connections=2)
    assert warmed == 2
    assert [delivery.http_status for delivery in deliveries] == [200] * 5
    assert receiver.connections == 2


def test_warming_counts_each_origin_by_its_own_jobs(receiver):
    with Receiver() as other:
        jobs = [claimed(receiver.url("/warm")) for _ in range(3)] + [claimed(other.url("/warm")) for _ in range(2)]
        warmed, _ = _warm_then_send(jobs, policy=policy_for(f"127.0.0.1:{receiver.port}", f"127.0.0.1:{other.port}"))
        assert (warmed, receiver.connections, other.connections) == (5, 3, 2)


def test_warming_dials_through_the_egress_check_and_opens_nothing_it_refuses():
    with ConnectionTrap() as trap:
        jobs = [claimed(f"http://127.0.0.1:{trap.port}/hook") for _ in range(3)]
        warmed, deliveries = _warm_then_send(jobs, policy=policy_for())
        assert warmed == 0
        assert [delivery.error for delivery in deliveries] == [GENERIC_MESSAGE] * 3
        assert trap.connections == 0


def test_warming_skips_urls_the_call_would_refuse_without_dialling(receiver):
    jobs = [claimed(f"http://127.0.0.1:0{receiver.port}/hook"), claimed("ftp://127.0.0.1/file"), claimed("not a url")]
    warmed, _ = _warm_then_send(jobs, policy=_policy(receiver))
    assert warmed == 0
    assert receiver.connections == 0
