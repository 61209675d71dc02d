"""One tenant's share of the create-time name lookups holds across the API pod's worker processes.

gunicorn's workers are processes of one request each (GUNICORN_THREADS 1): a count kept in each
process let one tenant's hanging names take every worker of the pod, and the other tenants'
requests waited behind them. Against a real gunicorn and a DNS server of the test's own.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.dns_server import DnsServer
from tests.serving import gunicorn, production_env

pytestmark = pytest.mark.django_db(transaction=True)

LOOKUP_TIMEOUT_SECONDS = 2.0


def _create(base: str, token: str, url: str) -> tuple[int, dict, float]:
    """(status, problem or task, seconds taken) of a POST /v1/tasks aiming at `url`."""
    body = {"name": "n", "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"}, "http": {"url": url}}
    request = urllib.request.Request(
        f"{base}/v1/tasks",
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Host": "jobsched.example.com",
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
        },
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read()), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), time.monotonic() - started


def test_one_tenants_hanging_names_hold_two_of_the_pods_three_workers_and_no_more(make_token, tmp_path):
    with DnsServer() as dns:
        env = production_env(
            THROTTLE_CACHE_URL="locmemcache://",
            GUNICORN_THREADS="1",
            DNS_NAMESERVERS=dns.nameserver,
            DNS_TIMEOUT_SECONDS=str(LOOKUP_TIMEOUT_SECONDS),
            DNS_API_LOOKUPS_PER_TENANT="2",
        )
        noisy, other = make_token("tenant-noisy"), make_token("tenant-other")
        with gunicorn(env, tmp_path / "gunicorn.log", workers=3) as base:
            noisy_answers: list[tuple[int, dict, float]] = []

            def create_hanging(n: int) -> None:
                noisy_answers.append(_create(base, noisy, f"https://n{n}.hang.test/x"))

            creators = [threading.Thread(target=create_hanging, args=(n,)) for n in range(3)]
            for creator in creators:
                creator.start()
            deadline = time.monotonic() + LOOKUP_TIMEOUT_SECONDS / 2
            while len(dns.asked_under(".hang.test")) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(dns.asked_under(".hang.test")) == 2, dns.questions  # two of its lookups hang
            status, task, seconds = _create(base, other, "https://93.184.215.14/x")
            for creator in creators:
                creator.join()

    assert status == 201, task
    # A worker was free for it: it did not wait for one of the hanging lookups to time out.
    assert seconds < LOOKUP_TIMEOUT_SECONDS / 2
    # The noisy tenant's third create found both of its slots held, in other processes: refused at
    # once, its name never asked (was: asked, a third worker held for the whole timeout).
    assert len(dns.asked_under(".hang.test")) == 2
    assert sorted(answer[0] for answer in noisy_answers) == [503, 503, 503]
    refused_at_once = [answer for answer in noisy_answers if answer[2] < LOOKUP_TIMEOUT_SECONDS / 2]
    assert len(refused_at_once) == 1
    assert all(answer[1]["type"].endswith("/url-check-unavailable") for answer in noisy_answers)


def test_gunicorn_warns_when_one_tenants_lookups_could_hold_every_worker(tmp_path):
    env = production_env(THROTTLE_CACHE_URL="locmemcache://", DNS_API_LOOKUPS_PER_TENANT="2", LOG_FORMAT="json")
    with gunicorn(env, tmp_path / "two.log", workers=2):
        pass
    with gunicorn(env, tmp_path / "three.log", workers=3):
        pass
    two = [json.loads(line) for line in (tmp_path / "two.log").read_text().splitlines() if line.startswith("{")]
    warned = [line for line in two if "DNS_API_LOOKUPS_PER_TENANT" in line["message"]]
    assert [(line["level"], line["message"]) for line in warned] == [
        (
            "WARNING",
            "DNS_API_LOOKUPS_PER_TENANT (2) is not below the workers x threads (2): one tenant's slow name lookups "
            "can hold every request of the pod",
        )
    ]
    assert "DNS_API_LOOKUPS_PER_TENANT" not in (tmp_path / "three.log").read_text()
