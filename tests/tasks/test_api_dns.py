"""The create-time check's name lookups, against a real DNS server of the test's own (tests.dns_server).

A name that does not exist is accepted (the dial-time check decides). A lookup that did not finish
(timed out, or too many in flight) is never taken as "resolved to nothing": the create is refused
with a 503 naming http.url, and dry run says `unknown`, not `unresolved`. It once was accepted: while
four hanging names held the resolver's four threads, a URL whose name resolves to 127.0.0.1 got in.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from outbound import egress
from tasks import targets
from tasks.models import Task
from tests.dns_server import DnsServer
from tests.factories import make_task

pytestmark = pytest.mark.django_db

TASKS = "/v1/tasks"


def _body(url: str) -> dict:
    return {"name": "n", "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"}, "http": {"url": url}}


@pytest.fixture
def dns(settings):
    """The API's resolver pointed at our server: lookups time out after 0.5 s, at most 2 in flight."""
    with DnsServer({"loopback.tenant-a.test": ["127.0.0.1"], "public.tenant-a.test": ["93.184.215.14"]}) as server:
        settings.DNS_NAMESERVERS = server.nameserver
        settings.DNS_TIMEOUT_SECONDS = 0.5
        settings.DNS_API_LOOKUPS_MAX = 2
        yield server


def _assert_url_check_unavailable(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "5"
    problem = response.json()
    assert problem["type"].endswith("/url-check-unavailable")
    assert list(problem["errors"]) == ["http.url"] and "http.url" in problem["detail"]


def test_a_url_whose_name_never_answers_is_refused_with_503_naming_the_url(owner, dns):
    response = owner.post(TASKS, _body("https://hooks.hang.test/x"), format="json")
    _assert_url_check_unavailable(response)  # was: 201, the task saved unchecked
    assert not Task.objects.exists()


def test_a_name_resolving_to_loopback_is_never_accepted_while_the_lookups_are_saturated(owner, dns):
    resolve = targets.name_resolver()
    failures: list[str] = []

    def hang(n: int) -> None:
        try:
            resolve(f"held-{n}.hang.test", 443)
        except egress.LookupUnfinished as exc:
            failures.append(str(exc))

    holders = [threading.Thread(target=hang, args=(n,)) for n in range(2)]
    for holder in holders:
        holder.start()
    deadline = time.monotonic() + 2
    while len(dns.asked_under(".hang.test")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # both lookups in flight
    response = owner.post(TASKS, _body("https://loopback.tenant-a.test/x"), format="json")
    for holder in holders:
        holder.join()
    _assert_url_check_unavailable(response)  # was: 201 (its lookup queued, timed out, taken as unresolved)
    assert not Task.objects.exists()
    assert failures == ["the lookup timed out"] * 2
    # Once the lookups are free, the name's real answer refuses it.
    response = owner.post(TASKS, _body("https://loopback.tenant-a.test/x"), format="json")
    assert response.status_code == 400 and response.json()["errors"] == {"http.url": ["destination not allowed"]}


def test_a_name_that_does_not_exist_is_still_accepted_and_a_public_one_too(owner, dns):
    assert owner.post(TASKS, _body("https://nowhere.tenant-a.test/x"), format="json").status_code == 201
    assert owner.post(TASKS, _body("https://public.tenant-a.test/x"), format="json").status_code == 201
    assert dns.asked("nowhere.tenant-a.test") >= 1 and dns.asked("public.tenant-a.test") >= 1


@pytest.mark.parametrize(
    "url, verdict",
    [
        ("https://hooks.hang.test/x", "unknown"),  # was: "unresolved"
        ("https://nowhere.tenant-a.test/x", "unresolved"),
        ("https://loopback.tenant-a.test/x", "refused"),
        ("https://public.tenant-a.test/x", "allowed"),
    ],
)
def test_dry_run_says_unknown_for_a_lookup_that_did_not_finish(owner, dns, url, verdict):
    task = make_task(http_url=url)
    response = owner.post(f"/v1/tasks/{task.pk}/dry-run")
    assert response.status_code == 200, response.content
    assert response.json()["egress"]["verdict"] == verdict


def test_one_tenants_hanging_names_hold_at_most_its_share_of_the_lookups(tenant_client, dns, settings):
    """The process cap alone let one tenant's slow creates take every lookup: another tenant's create was a 503."""
    settings.DNS_API_LOOKUPS_MAX = 4
    settings.DNS_API_LOOKUPS_PER_TENANT = 2
    noisy, other = tenant_client("tenant-noisy"), tenant_client("tenant-b")
    answers: list[int] = []

    def create(n: int) -> None:
        answers.append(noisy.post(TASKS, _body(f"https://n{n}.hang.test/x"), format="json").status_code)

    creators = [threading.Thread(target=create, args=(n,)) for n in range(4)]
    for creator in creators:
        creator.start()
    deadline = time.monotonic() + 2
    while len(dns.asked_under(".hang.test")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    response = other.post(TASKS, _body("https://public.tenant-a.test/x"), format="json")
    for creator in creators:
        creator.join()
    assert response.status_code == 201, response.content  # tenant-b's lookup had room
    assert sorted(answers) == [503] * 4
    assert len(dns.asked_under(".hang.test")) == 2  # the noisy tenant's third and fourth never asked


def test_an_address_needs_no_lookup_slot_while_the_tenants_names_hang(tenant_client, dns, settings):
    """A URL whose host is an address is checked without DNS: it was a 503 while the tenant's slots were taken
    (bench.api's 16 connections of one tenant met it with nothing hanging at all)."""
    settings.DNS_API_LOOKUPS_MAX = 4
    settings.DNS_API_LOOKUPS_PER_TENANT = 2
    noisy = tenant_client("tenant-noisy")
    answers: list[int] = []

    def create(n: int) -> None:
        answers.append(noisy.post(TASKS, _body(f"https://n{n}.hang.test/x"), format="json").status_code)

    creators = [threading.Thread(target=create, args=(n,)) for n in range(2)]
    for creator in creators:
        creator.start()
    deadline = time.monotonic() + 2
    while len(dns.asked_under(".hang.test")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    response = noisy.post(TASKS, _body("https://93.184.215.14/x"), format="json")
    for creator in creators:
        creator.join()
    assert len(dns.asked_under(".hang.test")) == 2  # both slots were held while the address was checked
    assert response.status_code == 201, response.content
    assert sorted(answers) == [503, 503]


def _import(client, urls: list[str]):
    lines = "\n".join(
        json.dumps(
            {"name": f"imported {n}", "schedule": {"cron": "*/5 * * * *", "timezone": "UTC"}, "http": {"url": url}}
        )
        for n, url in enumerate(urls)
    )
    return client.post("/v1/tasks/import", lines, content_type="application/x-ndjson")


def test_an_imports_lookups_are_bounded_together(owner, dns, settings):
    """An import checks its lines' names one after another on one worker, which gunicorn restarts past
    GUNICORN_TIMEOUT: past DNS_API_REQUEST_LOOKUP_SECONDS the import is a 503 naming the URL, nothing written."""
    urls = ["https://public.tenant-a.test/a", "https://nowhere.tenant-a.test/b"]
    settings.DNS_API_REQUEST_LOOKUP_SECONDS = 10.0
    answer = _import(owner, urls)
    assert answer.status_code == 200, answer.content
    assert Task.objects.count() == 2

    Task.objects.all().delete()
    settings.DNS_API_REQUEST_LOOKUP_SECONDS = 0.000001  # over before the first lookup
    asked_before = dns.asked("public.tenant-a.test")
    answer = _import(owner, [url.replace("/a", "/c").replace("/b", "/d") for url in urls])
    _assert_url_check_unavailable(answer)
    assert not Task.objects.exists()
    assert dns.asked("public.tenant-a.test") == asked_before  # no lookup begun past the bound


def test_a_create_has_no_request_bound_of_its_own(owner, dns, settings):
    settings.DNS_API_REQUEST_LOOKUP_SECONDS = 0.000001
    assert owner.post(TASKS, _body("https://public.tenant-a.test/x"), format="json").status_code == 201
