"""The API's edges: unknown paths under /v1/ are problem+json 404s, a trailing slash leads to the
resource, and `/` is a small page that links the documentation, the schema and the admin."""

from __future__ import annotations

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("path", ["/v1/", "/v1", "/v1/nothing-here", "/v1/tasks/x/y/z", "/v1/jobs"])
def test_unknown_paths_under_v1_are_problem_json_404s(owner, path, debug):
    with override_settings(DEBUG=debug):
        response = owner.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == "https://jobsched.dev/problems/not-found"
    assert "/v1/schema" in body["detail"]


@pytest.mark.parametrize("debug", [True, False])
def test_a_trailing_slash_redirects_to_the_resource_keeping_method_and_query(owner, debug):
    with override_settings(DEBUG=debug):
        listing = owner.get("/v1/tasks/?limit=5")
        create = owner.post("/v1/tasks/", {}, format="json")
    # 308 keeps the method and the body (RFC 9110 15.4.9): a POST stays a POST.
    assert listing.status_code == 308
    assert listing["Location"] == "/v1/tasks?limit=5"
    assert create.status_code == 308
    assert create["Location"] == "/v1/tasks"


def test_following_the_redirect_reaches_the_resource(owner):
    response = owner.get("/v1/tasks/", follow=True)
    assert response.status_code == 200
    assert "results" in response.json()


@pytest.mark.parametrize("debug", [True, False])
def test_the_root_is_a_small_page_linking_docs_schema_and_admin(client, debug):
    with override_settings(DEBUG=debug):
        response = client.get("/", HTTP_HOST="localhost")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    for link in ('href="/v1/docs"', 'href="/v1/redoc"', 'href="/v1/schema"', 'href="/admin/"'):
        assert link in page
