"""api.console_only: sessions, Django's users and messages run for the console, never for /v1/."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory

from api.console_only import AuthenticationMiddleware, MessageMiddleware, SessionMiddleware, is_api_request
from tests.admin.support import PASSWORD, make_staff

pytestmark = pytest.mark.django_db

TASK = {
    "name": "console-only",
    "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
    "http": {"url": "http://127.0.0.1:18080/hook"},
}


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    settings.EGRESS_ALLOWLIST = "127.0.0.1:18080"


@pytest.mark.parametrize(
    ("path", "api"),
    [
        ("/v1/tasks", True),
        ("/v1", True),
        ("/v1/", True),
        ("/v1/tasks/x/y", True),
        ("/v1x", False),
        ("/v10/tasks", False),
        ("/admin/", False),
        ("/", False),
        ("/healthz", False),
    ],
)
def test_the_api_is_the_paths_under_v1(path, api):
    assert is_api_request(RequestFactory().get(path)) is api


def test_an_api_request_under_a_script_name_is_still_the_apis():
    request = RequestFactory().get("/v1/tasks", SCRIPT_NAME="/jobsched")
    assert request.path == "/jobsched/v1/tasks"
    assert is_api_request(request)


def test_an_api_create_meets_no_session_and_no_messages(owner):
    owner.cookies["sessionid"] = "made-up"
    response = owner.post("/v1/tasks", TASK, format="json")
    assert response.status_code == 201, response.content
    assert not hasattr(response.wsgi_request, "session")
    assert not hasattr(response.wsgi_request, "_messages")
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")


def test_an_api_post_with_a_console_cookie_and_no_csrf_token_is_judged_by_its_token(owner, stranger):
    owner.handler.enforce_csrf_checks = True
    stranger.handler.enforce_csrf_checks = True
    for client in (owner, stranger):
        client.cookies["sessionid"] = "made-up"
        client.cookies["csrftoken"] = "x" * 32
    assert owner.post("/v1/tasks", TASK, format="json").status_code == 201
    assert stranger.post("/v1/tasks", TASK, format="json").status_code == 401


def test_the_console_still_refuses_a_sign_in_without_its_csrf_token():
    make_staff("agent")
    client = Client(enforce_csrf_checks=True)
    response = client.post("/admin/login/", {"username": "agent", "password": PASSWORD})
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session


def test_the_console_still_signs_in_with_its_csrf_token_and_keeps_the_session():
    make_staff("agent")
    client = Client(enforce_csrf_checks=True)
    page = client.get("/admin/login/")
    assert page.status_code == 200
    token = page.cookies["csrftoken"].value
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "agent", "password": PASSWORD, "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302, response.content[:500]
    assert client.session["_auth_user_id"]
    index = client.get("/admin/")
    assert index.status_code == 200
    assert index.wsgi_request.user.username == "agent"
    assert hasattr(index.wsgi_request, "_messages")


@pytest.mark.parametrize("middleware", [SessionMiddleware, AuthenticationMiddleware, MessageMiddleware])
def test_each_console_middleware_passes_an_api_request_on_untouched(middleware):
    seen = []
    chain = middleware(lambda request: seen.append(dict(request.__dict__)) or "answer")
    request = RequestFactory().get("/v1/tasks")
    before = dict(request.__dict__)
    assert chain(request) == "answer"
    assert seen == [before]
