"""The OpenAPI schema describes what the API really does: problems, headers, merge patch, docs pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from api.openapi import MERGE_PATCH_CONTENT_TYPE, PROBLEM_TYPES
from api.problems import PROBLEM_CONTENT_TYPE

pytestmark = pytest.mark.django_db

SOURCE_DIRS = ("jobsched_project", "tasks", "jobs", "history", "workers", "vault", "signing")


def task_body() -> dict:
    return {
        "name": "nightly report",
        "schedule": {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"},
        "http": {"url": "https://example.com/hook", "method": "POST", "body": "{}"},
    }


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        return APIClient().get("/v1/schema?format=json").json()


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_error_response_is_a_problem(schema):
    errors = 0
    for path, method, operation in operations(schema):
        for code, response in operation["responses"].items():
            if int(code) >= 400:
                errors += 1
                # Only problem+json, with the Problem schema (and examples of its own: test_openapi_examples.py).
                assert list(response["content"]) == [PROBLEM_CONTENT_TYPE], f"{method} {path} {code}"
                assert response["content"][PROBLEM_CONTENT_TYPE]["schema"] == {"$ref": "#/components/schemas/Problem"}
                assert response["description"] != PROBLEM_CONTENT_TYPE
    assert errors > 30
    problem = schema["components"]["schemas"]["Problem"]
    assert problem["required"] == ["type", "title", "status", "detail"]


def test_authenticated_operations_declare_401_and_429_with_retry_after(schema):
    for path, method, operation in operations(schema):
        assert "401" in operation["responses"], f"{method} {path}"
        assert operation["responses"]["429"]["headers"]["Retry-After"]["schema"] == {"type": "integer"}


def test_operations_with_a_body_declare_400_413_and_415(schema):
    with_body = [(p, m, o) for p, m, o in operations(schema) if "requestBody" in o]
    assert {(p, m) for p, m, _ in with_body} >= {("/v1/tasks", "post"), ("/v1/tasks/{task_id}", "patch")}
    for path, method, operation in with_body:
        assert {"400", "413", "415"} <= set(operation["responses"]), f"{method} {path}"


def test_every_operation_has_a_summary_and_the_history_ones_a_503_with_retry_after(schema):
    for path, method, operation in operations(schema):
        assert operation.get("summary"), f"{method} {path}"
    for path in ("/v1/jobs/{job_id}", "/v1/tasks/{task_id}/history"):
        assert "Retry-After" in schema["paths"][path]["get"]["responses"]["503"]["headers"]


def test_task_responses_declare_their_etag_and_the_201_its_location(schema):
    create = schema["paths"]["/v1/tasks"]["post"]["responses"]
    assert set(create["201"]["headers"]) == {"ETag", "Location"}
    assert "ETag" in create["200"]["headers"]
    for method in ("get", "patch"):
        assert "ETag" in schema["paths"]["/v1/tasks/{task_id}"][method]["responses"]["200"]["headers"]


def test_run_now_declares_the_location_of_its_job_on_200_and_202(schema):
    responses = schema["paths"]["/v1/tasks/{task_id}/run"]["post"]["responses"]
    for code in ("200", "202"):
        assert "Location" in responses[code]["headers"], code
    run = schema["paths"]["/v1/tasks/{task_id}/run"]["post"]
    assert "Location" not in [parameter["name"] for parameter in run["parameters"]]  # a response header only
    key = next(parameter for parameter in run["parameters"] if parameter["name"] == "Idempotency-Key")
    assert (key["schema"]["minLength"], key["schema"]["maxLength"]) == (1, 255)


@pytest.mark.parametrize(
    ("path", "method", "code"),
    [
        ("/v1/tasks/{task_id}/run", "post", "202"),
        ("/v1/tasks/{task_id}/dry-run", "post", "200"),
        ("/v1/tasks/{task_id}/preview", "get", "200"),
        ("/v1/schedules/preview", "post", "200"),
        ("/v1/signing-secrets", "post", "201"),
    ],
)
def test_the_new_endpoints_answers_have_examples(schema, path, method, code):
    content = schema["paths"][path][method]["responses"][code]["content"]["application/json"]
    assert content.get("examples"), f"{method} {path} {code}"


def test_the_create_body_has_an_example(schema):
    body = schema["paths"]["/v1/tasks"]["post"]["requestBody"]["content"]["application/json"]
    assert body["examples"]
    assert next(iter(body["examples"].values()))["value"]["schedule"]["cron"] == "0 9 * * 1-5"


def _required_anywhere(value) -> bool:
    if isinstance(value, dict):
        return "required" in value or any(_required_anywhere(v) for v in value.values())
    if isinstance(value, list):
        return any(_required_anywhere(v) for v in value)
    return False


def test_the_patch_body_is_a_merge_patch_with_nothing_required_at_any_depth(schema):
    body = schema["paths"]["/v1/tasks/{task_id}"]["patch"]["requestBody"]["content"]
    assert set(body) == {"application/json", MERGE_PATCH_CONTENT_TYPE}
    patch_schema = schema["components"]["schemas"]["TaskInputMergePatch"]
    assert "url" in patch_schema["properties"]["http"]["properties"]
    assert not _required_anywhere(patch_schema)
    # The create body still requires what it requires.
    assert "url" in schema["components"]["schemas"]["HttpInput"]["required"]


def test_a_created_task_answers_201_with_a_location_that_reads_it(tenant_client, fake_dns):
    client = tenant_client("tenant-a")
    created = client.post("/v1/tasks", task_body(), format="json")
    assert created.status_code == 201
    location = created.headers["Location"]
    assert location == f"/v1/tasks/{created.json()['id']}"
    assert client.get(location).json()["id"] == created.json()["id"]
    # A replay is not a creation: no Location.
    assert "Location" not in client.get(location).headers


def test_patch_accepts_application_merge_patch_json(tenant_client, fake_dns):
    client = tenant_client("tenant-a")
    created = client.post("/v1/tasks", task_body(), format="json").json()
    response = client.generic(
        "PATCH",
        f"/v1/tasks/{created['id']}",
        '{"name": "renamed", "http": {"method": "PUT"}}',
        content_type=MERGE_PATCH_CONTENT_TYPE,
        HTTP_IF_MATCH='"1"',
    )
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "renamed"
    assert response.json()["http"]["method"] == "PUT"
    assert response.json()["http"]["url"] == created["http"]["url"]


def test_merge_patch_is_refused_where_nothing_is_merged(tenant_client, fake_dns):
    response = tenant_client("tenant-a").generic(
        "POST", "/v1/tasks", '{"name": "x"}', content_type=MERGE_PATCH_CONTENT_TYPE
    )
    assert response.status_code == 415
    assert response.headers["Content-Type"].startswith(PROBLEM_CONTENT_TYPE)


@pytest.mark.parametrize("path", ["/v1/docs", "/v1/redoc"])
def test_the_docs_pages_are_served_without_a_token_and_without_a_cdn(client, path):
    response = client.get(path)
    assert response.status_code == 200
    page = response.content.decode()
    assert "/v1/schema" in page
    assert "drf_spectacular_sidecar" in page
    assert "cdn.jsdelivr.net" not in page and "unpkg.com" not in page


_RAISED_SLUG = re.compile(r"""(?:Problem\(\s*\d{3},\s*|slug=)["']([a-z][a-z0-9-]*)["']""")


def test_every_problem_type_the_code_raises_is_documented():
    raised = set()
    for folder in SOURCE_DIRS:
        for path in (Path(settings.BASE_DIR) / folder).rglob("*.py"):
            raised |= set(_RAISED_SLUG.findall(path.read_text()))
    assert raised, "the pattern found nothing: it no longer matches how problems are raised"
    assert raised <= set(PROBLEM_TYPES), raised - set(PROBLEM_TYPES)
    # DRF's own errors take their slug from the status phrase (problems.problem_body).
    assert {"unauthorized", "not-found", "unsupported-media-type", "too-many-requests", "bad-request"} <= set(
        PROBLEM_TYPES
    )
    doc = (Path(settings.BASE_DIR) / "docs" / "reference" / "problems.md").read_text()
    for slug in PROBLEM_TYPES:
        assert f"| `{slug}` |" in doc, slug
