"""Tenant authentication: only a verified JWT's tenant claim names the tenant."""

import base64
import hashlib
import hmac
import io
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import override_settings
from rest_framework.test import APIClient

from tasks.models import Task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

TASKS = "/v1/tasks"
BODY = {"name": "n", "schedule": {"cron": "0 9 * * *"}, "http": {"url": "https://example.com/hook"}}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _get(authorization: str | None):
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    return client.get(TASKS)


def _assert_401(response):
    assert response.status_code == 401, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["status"] == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.fixture(scope="module")
def rsa_pair():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def test_a_valid_token_is_accepted(make_token):
    response = _get(f"Bearer {make_token('tenant-a')}")
    assert response.status_code == 200
    assert response.json() == {"results": [], "next_cursor": None}


def test_a_request_without_a_token_is_401():
    _assert_401(_get(None))


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer",
        "Bearer not-a-jwt",
        "Bearer a.b.c",
        "Bearer eyJhbGciOiJIUzI1NiJ9.e30",
        "Basic dXNlcjpwYXNz",
        "Bearer " + "a" * 9000,
        "Bearer tok en",
    ],
)
def test_a_malformed_authorization_header_is_401(authorization):
    _assert_401(_get(authorization))


def test_an_expired_token_is_401(make_token):
    response = _get(f"Bearer {make_token('tenant-a', ttl=-10)}")
    _assert_401(response)
    assert "expired" in response.json()["detail"]


def test_a_token_without_expiry_is_401(make_token):
    _assert_401(_get(f"Bearer {make_token('tenant-a', exp=None)}"))


def test_a_token_signed_with_another_key_is_401(make_token):
    _assert_401(_get(f"Bearer {make_token('tenant-a', key='another-secret-of-at-least-32-bytes!!')}"))


def test_an_alg_none_token_is_401(make_token):
    payload = jwt.decode(make_token("tenant-a"), options={"verify_signature": False})
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    unsigned = f"{header}.{_b64(json.dumps(payload).encode())}."
    _assert_401(_get(f"Bearer {unsigned}"))


@pytest.mark.filterwarnings("ignore:The HMAC key")
def test_a_token_with_another_hmac_algorithm_is_401(make_token):
    _assert_401(_get(f"Bearer {make_token('tenant-a', algorithm='HS512')}"))


def test_an_rs256_token_is_401_when_hs256_is_configured(make_token, rsa_pair):
    private, _ = rsa_pair
    _assert_401(_get(f"Bearer {make_token('tenant-a', key=private, algorithm='RS256')}"))


def test_rs256_tokens_verify_with_the_configured_public_key(make_token, rsa_pair):
    private, public = rsa_pair
    with override_settings(JWT_ALGORITHM="RS256", JWT_VERIFYING_KEY=public, JWT_SIGNING_KEY=private):
        assert _get(f"Bearer {make_token('tenant-a')}").status_code == 200


def test_algorithm_confusion_hs256_signed_with_the_public_key_is_401(make_token, rsa_pair):
    """The classic attack: an HS256 token whose HMAC secret is the server's RSA public key."""
    private, public = rsa_pair
    payload = jwt.decode(make_token("tenant-a"), options={"verify_signature": False})
    signing_input = f"{_b64(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())}.{_b64(json.dumps(payload).encode())}"
    signature = hmac.new(public.encode(), signing_input.encode(), hashlib.sha256).digest()
    forged = f"{signing_input}.{_b64(signature)}"
    with override_settings(JWT_ALGORITHM="RS256", JWT_VERIFYING_KEY=public, JWT_SIGNING_KEY=private):
        _assert_401(_get(f"Bearer {forged}"))


@pytest.mark.parametrize("aud", ["another-service", ["another-service"], None])
def test_a_token_for_another_audience_or_none_is_401(make_token, aud):
    _assert_401(_get(f"Bearer {make_token('tenant-a', aud=aud)}"))  # aud=None drops the claim


def test_a_token_from_another_issuer_is_401_when_an_issuer_is_configured(make_token):
    with override_settings(JWT_ISSUER="https://idp.example.com/"):
        _assert_401(_get(f"Bearer {make_token('tenant-a', iss='https://evil.example.com/')}"))
        assert _get(f"Bearer {make_token('tenant-a', iss='https://idp.example.com/')}").status_code == 200


@pytest.mark.parametrize("tenant", [None, "", "   ", 123, ["tenant-a"], {"id": "tenant-a"}, True, "x" * 65, "a\nb"])
def test_a_token_whose_tenant_claim_is_missing_empty_or_not_a_string_is_401(make_token, tenant):
    _assert_401(_get(f"Bearer {make_token(tenant)}"))


def test_the_tenant_claim_is_the_configured_one_only(make_token):
    with override_settings(JWT_TENANT_CLAIM="org"):
        # A token carrying only the default claim names no tenant under this configuration.
        _assert_401(_get(f"Bearer {make_token(None, tenant_id='tenant-a')}"))
        assert _get(f"Bearer {make_token('tenant-b')}").status_code == 200  # signs {"org": "tenant-b"}


def test_a_tenant_id_in_the_query_or_a_header_is_ignored(tenant_client):
    client = tenant_client("tenant-a")
    response = client.post(f"{TASKS}?tenant_id=tenant-b", BODY, format="json", HTTP_X_TENANT_ID="tenant-b")
    assert response.status_code == 201
    assert Task.objects.get(pk=response.json()["id"]).tenant_id == "tenant-a"
    assert tenant_client("tenant-b").get(f"{TASKS}/{response.json()['id']}").status_code == 404
    listed = client.get(f"{TASKS}?tenant_id=tenant-b", HTTP_X_TENANT_ID="tenant-b").json()["results"]
    assert [task["id"] for task in listed] == [response.json()["id"]]


def test_a_tenant_id_in_the_body_is_refused_by_name(tenant_client):
    response = tenant_client("tenant-a").post(TASKS, {**BODY, "tenant_id": "tenant-b"}, format="json")
    assert response.status_code == 400
    assert "tenant_id" in response.json()["errors"]
    assert not Task.objects.exists()


def test_issue_token_prints_a_token_the_api_accepts():
    out = io.StringIO()
    call_command("issue_token", tenant="tenant-z", ttl=120, stdout=out)
    token = out.getvalue().strip()
    assert _get(f"Bearer {token}").status_code == 200
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["tenant_id"] == "tenant-z"
    assert claims["exp"] - claims["iat"] == 120


@pytest.mark.parametrize(
    "tenant,ttl", [("", 60), ("   ", 60), ("a\nb", 60), ("x" * 65, 60), ("a", 0), ("a", -5), ("a", 10**9)]
)
def test_issue_token_refuses_a_bad_tenant_or_ttl(tenant, ttl):
    with pytest.raises(CommandError):
        call_command("issue_token", tenant=tenant, ttl=ttl, stdout=io.StringIO())


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
def test_a_time_claim_given_as_a_string_is_401(make_token, claim):
    import time

    value = str(int(time.time()) + (3600 if claim == "exp" else -10))
    _assert_401(_get(f"Bearer {make_token('tenant-a', **{claim: value})}"))


@pytest.mark.parametrize("value", [True, "tomorrow", [1], {"t": 1}])
def test_an_exp_that_is_not_a_number_is_401(make_token, value):
    _assert_401(_get(f"Bearer {make_token('tenant-a', exp=value)}"))


def test_a_token_living_longer_than_the_maximum_lifetime_is_401(make_token):
    with override_settings(JWT_MAX_LIFETIME_SECONDS=3600):
        assert _get(f"Bearer {make_token('tenant-a', ttl=3600)}").status_code == 200
        _assert_401(_get(f"Bearer {make_token('tenant-a', ttl=3601)}"))
        # Without iat the bound is on what is left of it.
        assert _get(f"Bearer {make_token('tenant-a', ttl=600, iat=None)}").status_code == 200
        _assert_401(_get(f"Bearer {make_token('tenant-a', ttl=7200, iat=None)}"))
    assert _get(f"Bearer {make_token('tenant-a', ttl=30 * 86400)}").status_code == 200  # unset: no maximum


@pytest.fixture
def decodes(monkeypatch):
    """How many times PyJWT decoded a token (a spy: the decode itself runs)."""
    calls = []
    real = jwt.decode

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counted)
    return calls


def test_a_token_is_verified_the_first_time_and_refused_once_expired(make_token, decodes):
    expiry = int(time.time()) + 2
    token = make_token("tenant-a", exp=expiry)

    assert _get(f"Bearer {token}").status_code == 200
    assert _get(f"Bearer {token}").status_code == 200
    assert decodes == [token]

    time.sleep(max(0.0, expiry - time.time()) + 0.05)
    decodes.clear()
    response = _get(f"Bearer {token}")
    _assert_401(response)
    assert "expired" in response.json()["detail"] and decodes == []  # the kept claims' own expiry


def test_a_token_like_a_kept_one_but_one_character_is_verified_and_refused(make_token, decodes):
    token = make_token("tenant-a")
    assert _get(f"Bearer {token}").status_code == 200
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged_payload = _b64(json.dumps({**claims, settings.JWT_TENANT_CLAIM: "tenant-b"}).encode())

    for forged in (f"{header}.{payload}.{signature[:-2]}{'A' if signature[-2] != 'A' else 'B'}{signature[-1]}",
                   f"{header}.{forged_payload}.{signature}"):  # fmt: skip
        _assert_401(_get(f"Bearer {forged}"))
    assert len(decodes) == 3  # the token, then each forgery


def test_new_keys_verify_a_kept_token_anew(make_token):
    token = make_token("tenant-a")
    assert _get(f"Bearer {token}").status_code == 200

    with override_settings(JWT_VERIFYING_KEY="another-secret-of-at-least-32-bytes!!"):
        _assert_401(_get(f"Bearer {token}"))


def test_each_request_gets_its_own_copy_of_a_kept_tokens_claims(make_token):
    from api.auth import TenantJWTAuthentication

    token = make_token("tenant-a").encode()
    first = TenantJWTAuthentication().get_validated_token(token)
    first[settings.JWT_TENANT_CLAIM] = "tenant-b"

    assert TenantJWTAuthentication().get_validated_token(token)[settings.JWT_TENANT_CLAIM] == "tenant-a"
