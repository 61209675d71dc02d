"""Our signatures verify with the Standard Webhooks reference library, under each secret of a rotation."""

import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from outbound.signature import SIGNATURE_HEADER, key_of, new_secret, signature, signature_headers


def test_a_new_secret_is_whsec_base64_of_32_bytes_and_differs_each_time():
    first, second = new_secret(), new_secret()
    assert first.startswith("whsec_") and first != second
    assert len(key_of(first)) == 32


@pytest.mark.parametrize("body", [b"", b'{"kind": "daily"}', "caf\u00e9 \u2603".encode()])
def test_signature_verifies_with_the_standardwebhooks_library(body):
    secret = new_secret()
    headers = signature_headers(keys=[key_of(secret)], msg_id="0190-job", timestamp=int(time.time()), body=body)
    Webhook(secret).verify(body, headers, json_parse=False)  # raises if it does not verify


def test_during_a_rotation_either_secret_verifies_and_a_third_does_not():
    old, new, stranger = new_secret(), new_secret(), new_secret()
    body = b"payload"
    headers = signature_headers(keys=[key_of(new), key_of(old)], msg_id="m", timestamp=int(time.time()), body=body)
    assert len(headers[SIGNATURE_HEADER].split(" ")) == 2
    Webhook(old).verify(body, headers, json_parse=False)
    Webhook(new).verify(body, headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(stranger).verify(body, headers, json_parse=False)


def test_a_changed_body_id_or_timestamp_does_not_verify():
    secret = new_secret()
    now = int(time.time())
    headers = signature_headers(keys=[key_of(secret)], msg_id="m", timestamp=now, body=b"a")
    for body, changed in [(b"b", {}), (b"a", {"webhook-id": "other"}), (b"a", {"webhook-timestamp": str(now - 1)})]:
        with pytest.raises(WebhookVerificationError):
            Webhook(secret).verify(body, {**headers, **changed}, json_parse=False)


@pytest.mark.parametrize("bad", ["", "whsec_", "sk_abc", "whsec_not*base64"])
def test_a_malformed_secret_is_refused(bad):
    with pytest.raises(ValueError):
        key_of(bad)


def test_signing_needs_a_key():
    with pytest.raises(ValueError):
        signature(keys=[], msg_id="m", timestamp=0, body=b"")
