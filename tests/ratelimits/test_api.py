"""POST/GET/DELETE /v1/rate-limits: create or replace by origin, pages, 400s naming the field, tenants apart."""

import pytest

from ratelimits import services
from ratelimits.models import OriginBucket, RateLimit

pytestmark = pytest.mark.django_db
URL = "/v1/rate-limits"


def test_create_normalises_the_origin_and_a_second_post_replaces_it(tenant_client):
    client = tenant_client("tenant-a")
    created = client.post(URL, {"origin": "HTTPS://Hooks.Example.com", "per_second": 50, "burst": 20}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["origin"] == "https://hooks.example.com:443"
    assert (body["per_second"], body["burst"]) == (50.0, 20)
    assert created["Location"] == f"{URL}/{body['id']}"
    # The same origin written another way: the same limit, replaced.
    replaced = client.post(
        URL, {"origin": "https://hooks.example.com:443/", "per_second": 0.5, "burst": 1}, format="json"
    )
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["id"] == body["id"]
    assert client.get(created["Location"]).json()["per_second"] == 0.5
    assert RateLimit.objects.count() == 1
    # Its bucket exists from the start: the executors' claim sees the tenant as paced.
    assert OriginBucket.objects.filter(tenant_id="tenant-a", origin="https://hooks.example.com:443").count() == 1


def test_list_pages_newest_first_and_delete_removes(tenant_client):
    client = tenant_client("tenant-a")
    ids = [
        client.post(URL, {"origin": f"http://10.0.0.{n}:8080", "per_second": 1, "burst": 1}, format="json").json()["id"]
        for n in range(3)
    ]
    first = client.get(URL, {"limit": 2}).json()
    assert [row["id"] for row in first["results"]] == ids[::-1][:2]
    second = client.get(URL, {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [row["id"] for row in second["results"]] == [ids[0]] and second["next_cursor"] is None
    assert client.delete(f"{URL}/{ids[1]}").status_code == 204
    assert client.get(f"{URL}/{ids[1]}").status_code == 404
    assert client.delete(f"{URL}/{ids[1]}").status_code == 404
    assert [row["id"] for row in client.get(URL).json()["results"]] == [ids[2], ids[0]]


def test_another_tenants_limit_is_a_404_and_never_listed(tenant_client):
    mine = tenant_client("tenant-a").post(
        URL, {"origin": "https://a.example", "per_second": 5, "burst": 5}, format="json"
    )
    limit_id = mine.json()["id"]
    other = tenant_client("tenant-b")
    assert other.get(f"{URL}/{limit_id}").status_code == 404
    assert other.delete(f"{URL}/{limit_id}").status_code == 404
    assert other.get(URL).json() == {"results": [], "next_cursor": None}
    # The same origin for tenant-b is its own limit, not a replace of tenant-a's.
    theirs = other.post(URL, {"origin": "https://a.example", "per_second": 1, "burst": 1}, format="json")
    assert theirs.status_code == 201 and theirs.json()["id"] != limit_id
    assert RateLimit.objects.get(id=limit_id).per_second == 5


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"origin": "ftp://x.example", "per_second": 1, "burst": 1}, "origin"),
        ({"origin": "https://x.example/path", "per_second": 1, "burst": 1}, "origin"),
        ({"origin": "https://user@x.example", "per_second": 1, "burst": 1}, "origin"),
        ({"origin": "https://x.example:99999", "per_second": 1, "burst": 1}, "origin"),
        ({"origin": "https://", "per_second": 1, "burst": 1}, "origin"),
        ({"origin": 7, "per_second": 1, "burst": 1}, "origin"),
        ({"origin": "https://" + "a" * 400, "per_second": 1, "burst": 1}, "origin"),
        ({"per_second": 1, "burst": 1}, "origin"),
        ({"origin": "https://x.example", "per_second": 0, "burst": 1}, "per_second"),
        ({"origin": "https://x.example", "per_second": 10001, "burst": 1}, "per_second"),
        ({"origin": "https://x.example", "per_second": "5", "burst": 1}, "per_second"),
        ({"origin": "https://x.example", "per_second": True, "burst": 1}, "per_second"),
        ({"origin": "https://x.example", "burst": 1}, "per_second"),
        ({"origin": "https://x.example", "per_second": 1, "burst": 0}, "burst"),
        ({"origin": "https://x.example", "per_second": 1, "burst": 1.5}, "burst"),
        ({"origin": "https://x.example", "per_second": 1, "burst": 10001}, "burst"),
        ({"origin": "https://x.example", "per_second": 1}, "burst"),
        ({"origin": "https://x.example", "per_second": 1, "burst": 1, "tenant_id": "tenant-b"}, "tenant_id"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(tenant_client, body, field):
    response = tenant_client("tenant-a").post(URL, body, format="json")
    assert response.status_code == 400, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert field in response.json()["errors"]
    assert RateLimit.objects.count() == 0


@pytest.mark.parametrize(("params", "field"), [({"limit": "0"}, "limit"), ({"cursor": "nope"}, "cursor")])
def test_bad_list_parameters_are_a_400_naming_them(tenant_client, params, field):
    response = tenant_client("tenant-a").get(URL, params)
    assert response.status_code == 400 and field in response.json()["errors"]


def test_a_malformed_id_is_a_404(tenant_client):
    assert tenant_client("tenant-a").get(f"{URL}/not-an-id").status_code == 404


def test_the_count_per_tenant_is_bounded(tenant_client, monkeypatch):
    monkeypatch.setattr(services, "MAX_RATE_LIMITS", 2)
    client = tenant_client("tenant-a")
    for n in range(2):
        assert (
            client.post(URL, {"origin": f"https://{n}.example", "per_second": 1, "burst": 1}, format="json").status_code
            == 201
        )
    third = client.post(URL, {"origin": "https://2.example", "per_second": 1, "burst": 1}, format="json")
    assert third.status_code == 409 and third.json()["type"].endswith("rate-limits-limit")
    # Replacing one of the two is still fine; another tenant has its own count.
    assert (
        client.post(URL, {"origin": "https://0.example", "per_second": 2, "burst": 1}, format="json").status_code == 200
    )
    other = tenant_client("tenant-b").post(
        URL, {"origin": "https://2.example", "per_second": 1, "burst": 1}, format="json"
    )
    assert other.status_code == 201
