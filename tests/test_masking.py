"""Masking for display: credential-like names and values in URLs, headers and bodies (issue #13)."""

from __future__ import annotations

import json

import pytest

from jobsched_project.masking import MASK, is_secret_name, mask_body, mask_headers, mask_url

CREDENTIAL = "c0ffee-5ecret-value"


@pytest.mark.parametrize(
    "name",
    ["sig", "Sig", "x-sig", "signature", "X-Amz-Signature", "token", "access_token", "api_key", "apikey", "key",
     "password", "pwd", "secret", "client_secret", "sas", "jwt", "X-Hub-Signature-256"],
)  # fmt: skip
def test_credential_like_parameter_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["design", "signal", "page", "assign", "passage", "limit", "id"])
def test_words_that_only_contain_a_short_credential_word_are_not(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "parameter",
    ["sig", "token", "key", "signature", "password", "secret", "access_token", "api_key", "X-Amz-Signature"],
)
def test_credential_query_parameters_are_masked_in_urls(parameter):
    masked = mask_url(f"https://hooks.example.com/run?page=2&{parameter}={CREDENTIAL}")
    assert CREDENTIAL not in masked
    assert masked == f"https://hooks.example.com/run?page=2&{parameter}={MASK}"


def test_json_body_fields_are_masked_by_name_and_by_value_at_any_depth():
    body = json.dumps(
        {
            "callback": f"https://example.com/cb?sig={CREDENTIAL}&x=1",
            "nested": [{"access_token": CREDENTIAL}, {"note": f"Bearer {CREDENTIAL}"}],
            "jwt_like": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "kept": "plain words",
        }
    )
    masked = mask_body(body)
    assert CREDENTIAL not in masked and "eyJhbGciOiJIUzI1NiJ9" not in masked
    parsed = json.loads(masked)
    assert parsed["callback"] == f"https://example.com/cb?sig={MASK}&x=1"
    assert parsed["nested"][0]["access_token"] == MASK
    assert parsed["kept"] == "plain words"


def test_form_and_text_bodies_lose_credential_pairs_and_url_secrets():
    assert mask_body(f"grant_type=client_credentials&client_secret={CREDENTIAL}&scope=a") == (
        f"grant_type=client_credentials&client_secret={MASK}&scope=a"
    )
    text = mask_body(f"error: token={CREDENTIAL} for https://example.com/x?signature={CREDENTIAL} page=2")
    assert CREDENTIAL not in text
    assert "page=2" in text


def test_header_values_holding_a_url_or_a_bearer_credential_are_masked():
    masked = mask_headers({"X-Callback": f"https://example.com/?key={CREDENTIAL}", "X-Forward": f"Bearer {CREDENTIAL}"})
    assert CREDENTIAL not in json.dumps(masked)
    assert masked["X-Callback"] == f"https://example.com/?key={MASK}"
