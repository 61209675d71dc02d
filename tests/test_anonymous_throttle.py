"""Requests without a valid token are throttled per client address, before they cost a tenant anything."""

from __future__ import annotations

import pytest
from django.test import override_settings

TASKS = "/v1/tasks"


@pytest.mark.django_db
@override_settings(ANONYMOUS_THROTTLE_RATE="5/minute")
def test_an_address_without_a_valid_token_is_throttled_after_its_budget(client, make_token):
    for _ in range(5):
        assert client.get(TASKS, REMOTE_ADDR="198.51.100.7").status_code == 401
    refused = client.get(TASKS, REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/problem+json"
    assert int(refused["Retry-After"]) > 0
    bad_token = client.get(TASKS, REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION="Bearer not.a.token")
    assert bad_token.status_code == 429
    # Another address has its own budget; a valid token never spends or meets the anonymous one.
    assert client.get(TASKS, REMOTE_ADDR="198.51.100.8").status_code == 401
    token = make_token("tenant-a")
    assert client.get(TASKS, REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


@pytest.mark.django_db
@override_settings(ANONYMOUS_THROTTLE_RATE="2/minute")
def test_failed_tokens_count_against_the_address_too(client):
    for _ in range(2):
        assert client.get(TASKS, REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer x.y.z").status_code == 401
    assert client.get(TASKS, REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer x.y.z").status_code == 429


@pytest.mark.django_db
@override_settings(ANONYMOUS_THROTTLE_RATE="2/minute", FORWARDED_ALLOW_IPS=["10.1.1.1"])
def test_behind_a_trusted_proxy_the_address_is_the_one_the_proxy_saw(client):
    for _ in range(2):
        assert (
            client.get(TASKS, REMOTE_ADDR="10.1.1.1", HTTP_X_FORWARDED_FOR="192.0.2.1, 198.51.100.20").status_code
            == 401
        )
    # Same proxy, another client: its own budget.
    assert client.get(TASKS, REMOTE_ADDR="10.1.1.1", HTTP_X_FORWARDED_FOR="198.51.100.21").status_code == 401
    assert client.get(TASKS, REMOTE_ADDR="10.1.1.1", HTTP_X_FORWARDED_FOR="9.9.9.9, 198.51.100.20").status_code == 429


@pytest.mark.django_db
@override_settings(ANONYMOUS_THROTTLE_RATE="2/minute")
def test_an_untrusted_peer_cannot_pick_its_budget_with_x_forwarded_for(client):
    for i in range(2):
        assert client.get(TASKS, REMOTE_ADDR="198.51.100.30", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").status_code == 401
    assert client.get(TASKS, REMOTE_ADDR="198.51.100.30", HTTP_X_FORWARDED_FOR="192.0.2.99").status_code == 429


@pytest.mark.django_db
@override_settings(ANONYMOUS_THROTTLE_RATE="2/minute")
def test_an_ipv6_client_cannot_pick_a_fresh_budget_inside_its_64(client):
    for i in range(2):
        assert client.get(TASKS, REMOTE_ADDR=f"2001:db8:1:2::{i + 1}").status_code == 401
    assert client.get(TASKS, REMOTE_ADDR="2001:db8:1:2:ffff::9").status_code == 429
    assert client.get(TASKS, REMOTE_ADDR="2001:db8:1:3::1").status_code == 401  # another /64


@pytest.mark.django_db
@override_settings(
    SECURE_SSL_REDIRECT=True,
    SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
    FORWARDED_ALLOW_IPS=["10.1.1.1"],
)
def test_the_proxys_https_header_counts_only_from_the_proxy(client):
    from_proxy = client.get(TASKS, REMOTE_ADDR="10.1.1.1", HTTP_X_FORWARDED_PROTO="https")
    assert from_proxy.status_code == 401  # taken as https: no redirect
    direct = client.get(TASKS, REMOTE_ADDR="198.51.100.40", HTTP_X_FORWARDED_PROTO="https")
    assert direct.status_code == 301  # a client's own claim of https is dropped


@pytest.mark.django_db
@override_settings(ANONYMOUS_THROTTLE_RATE="2/minute")
def test_the_consoles_login_form_spends_the_address_budget(client):
    form = {"username": "nobody", "password": "wrong"}
    for _ in range(2):
        assert client.post("/admin/login/", form, REMOTE_ADDR="198.51.100.50").status_code == 200  # the form again
    refused = client.post("/admin/login/", form, REMOTE_ADDR="198.51.100.50")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert client.get("/admin/login/", REMOTE_ADDR="198.51.100.50").status_code == 200  # the page still shows
    assert client.post("/admin/login/", form, REMOTE_ADDR="198.51.100.51").status_code == 200
