"""The console's rules on their own: masking, pacing, the bounded summary."""

from __future__ import annotations

import json

import pytest

from jobs.console import Pacer, dead_summary
from jobsched_project.masking import MASK, is_secret_name, mask_body, mask_headers, mask_url
from tests.admin.conftest import FakeTime
from tests.admin.support import make_dead_job
from tests.factories import make_task


@pytest.mark.parametrize(
    "name",
    ["Authorization", "cookie", "Proxy-Authorization", "X-Api-Key", "X-Auth-Token", "client_secret", "PASSWORD"],
)
def test_credential_looking_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["Content-Type", "Accept", "X-Trace", "User-Agent"])
def test_ordinary_header_names_are_not_secret(name):
    assert not is_secret_name(name)


def test_headers_keep_names_and_lose_secret_values():
    masked = mask_headers({"Authorization": "Bearer abc", "Accept": "application/json"})

    assert masked == {"Authorization": MASK, "Accept": "application/json"}


def test_headers_that_are_not_a_mapping_show_as_none():
    assert mask_headers(["Authorization: x"]) == {}


def test_url_userinfo_and_secret_query_values_are_masked():
    masked = mask_url("https://user:pw@hooks.example.com/run?access_token=abc&page=2")

    assert "pw" not in masked and "abc" not in masked
    assert masked.startswith(f"https://{MASK}@hooks.example.com/run?")
    assert "page=2" in masked


def test_json_bodies_lose_secret_keys_at_any_depth_and_other_bodies_are_shown_as_sent():
    body = json.dumps({"auth": {"password": "p"}, "items": [{"api_key": "k", "id": 1}]})

    masked = json.loads(mask_body(body))

    assert masked == {"auth": MASK, "items": [{"api_key": MASK, "id": 1}]}
    assert mask_body("plain text") == "plain text"
    assert mask_body("") == ""


def test_pacer_spaces_calls_and_lets_the_first_through_at_once():
    fake = FakeTime()
    pacer = Pacer(5, clock=fake.clock, sleep=fake.sleep)

    for _ in range(4):
        pacer.wait()

    assert fake.slept == [pytest.approx(0.2)] * 3


def test_pacer_does_not_sleep_when_calls_are_already_slow_enough():
    fake = FakeTime()
    pacer = Pacer(5, clock=fake.clock, sleep=fake.sleep)

    pacer.wait()
    fake.now += 1
    pacer.wait()

    assert fake.slept == []


def test_an_unpaced_pacer_never_sleeps():
    fake = FakeTime()
    pacer = Pacer(0, clock=fake.clock, sleep=fake.sleep)

    for _ in range(3):
        pacer.wait()

    assert fake.slept == []


@pytest.mark.django_db
def test_summary_marks_counts_as_lower_bounds_when_the_scan_is_capped():
    task = make_task(tenant_id="tenant-a")
    for _ in range(3):
        make_dead_job(task)

    capped = dead_summary(scan_rows=2)
    whole = dead_summary(scan_rows=3)

    assert capped.capped and capped.scanned == capped.tenants[0].dead == 3  # N + 1 rows read, so it knows
    assert not whole.capped and whole.scanned == 3 and whole.tenants[0].dead == 3


@pytest.mark.django_db
def test_summary_of_an_empty_dead_letter_queue_is_empty():
    summary = dead_summary()

    assert summary.tenants == [] and summary.scanned == 0 and not summary.capped
