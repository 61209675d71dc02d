"""Masking for display: credential-like names and values in URLs, headers and bodies (issue #13)."""

from __future__ import annotations

import json

import pytest

from bench.masking import adversarial_bodies
from domain import masking
from domain.masking import MASK, is_secret_name, mask_body, mask_headers, mask_url

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


# --- bodies built to stall or crash the masking (bench.masking times them; these only check the result) ---


def _squeezed(text: str) -> str:
    return text.replace("\n", "").replace(" ", "")


@pytest.mark.parametrize("size", [16 * 1024, 64 * 1024])
@pytest.mark.parametrize("shape", list(adversarial_bodies(1024)))
def test_bodies_built_against_the_masking_are_shown_whole_and_still_masked(shape, size):
    prefix = f'token="{CREDENTIAL}" '
    body = adversarial_bodies(size - len(prefix))[shape]
    assert mask_body(prefix + body) == f"token={MASK} " + body  # as text: the prefix makes it no JSON
    assert _squeezed(mask_body(body)) == _squeezed(body)  # as it comes: JSON, or text when too deep


@pytest.mark.parametrize("depth", [600, 100_000])
def test_json_nested_deeper_than_python_recurses_is_masked_as_text(depth):
    body = '{"access_token": "' + CREDENTIAL + '", "deep": ' + "[" * depth + "]" * depth + "}"
    masked = mask_body(body)
    assert CREDENTIAL not in masked
    # At 100k the arrays pass BODY_LIMIT: the shown part ends before the word the bound splits.
    assert masked.startswith('{"access_token": ' + MASK + ', "deep":')


def test_json_within_the_depth_bound_is_still_masked_by_key_and_pretty_printed():
    inner: object = {"credentials": {"user": "u", "pw": CREDENTIAL}, "kept": "yes"}
    for _ in range(20):
        inner = {"level": inner}
    masked = mask_body(json.dumps(inner))
    assert CREDENTIAL not in masked
    assert '"credentials": "' + MASK + '"' in masked and '"kept": "yes"' in masked
    assert masked.startswith('{\n  "level": {\n    "level": {')


def test_only_the_first_body_limit_characters_are_masked_and_shown_and_the_rest_is_counted():
    limit = masking.BODY_LIMIT
    body = "word " * limit  # five times the bound
    masked = mask_body(body)
    assert masked.startswith("word word")
    assert len(masked) <= limit + 100
    assert masked.endswith(f"characters not shown: the console shows the first {limit})")


@pytest.mark.parametrize(
    "straddling",
    ['password: "' + "p4ss-phrase " * 100 + '"', "Authorization: Bearer " + "b3arer" * 100, "token=" + "t0ken" * 100],
)
def test_a_credential_the_bound_cuts_is_not_shown_in_part(straddling):
    filler = "x " * ((masking.BODY_LIMIT - 40) // 2)
    masked = mask_body(filler + straddling + " and more")
    for fragment in ("p4ss", "b3arer", "t0ken"):
        assert fragment not in masked


def test_an_unterminated_quoted_value_is_masked_to_the_end():
    assert mask_body(f'note: ok, password: "{CREDENTIAL} and the rest') == f"note: ok, password: {MASK}"


def test_a_credentials_object_or_array_in_json_too_deep_to_parse_is_masked_whole():
    """Masked as text (too deep), a secret-named key's object or array goes whole, not only its first character."""
    pad = "[" * 40 + "]" * 40
    body = (
        '{"credentials": {"user": "svc", "value": "S3CRET-VALUE", "x": "a}b"}, '
        '"api_keys": ["AKIA-SECRET-1", ["AKIA-SECRET-2"]], "note": "kept", "pad": ' + pad + "}"
    )
    masked = mask_body(body)
    assert "S3CRET-VALUE" not in masked and "AKIA-SECRET" not in masked
    assert '"note": "kept"' in masked
    assert masked.count(MASK) == 2
