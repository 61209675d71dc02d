"""Standard Webhooks signatures (https://www.standardwebhooks.com), pure: no database, no clock.

A call carries `webhook-id` (the job id: the same on every attempt, like
Idempotency-Key), `webhook-timestamp` (Unix seconds at send time) and
`webhook-signature`: `v1,<base64 HMAC-SHA256>` of `"{id}.{timestamp}.{body}"`
under each of the tenant's valid secrets, space-separated, so a receiver that
knows either secret of a rotation verifies the call. A secret is
`whsec_<base64 of 32 random bytes>`; the HMAC key is the decoded bytes.
A dry run shows the header's shape only (`v1,<withheld>` per secret): a real
signature there would let whoever holds an API token mint signed payloads
with no job and no audit trail.
Receivers verify with the `standardwebhooks` package (docs/tutorial/receiving-calls.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Sequence

from outbound.headers import SIGNATURE_HEADER, SIGNATURE_ID_HEADER, SIGNATURE_TIMESTAMP_HEADER

SECRET_PREFIX = "whsec_"
KEY_BYTES = 32
WITHHELD = "<withheld>"


def new_secret() -> str:
    """A fresh secret, shown to the tenant once."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode("ascii")


def key_of(secret: str) -> bytes:
    """The HMAC key of a `whsec_...` secret; ValueError for anything else."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("not a whsec_ secret")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error:
        raise ValueError("not base64") from None
    if not key:
        raise ValueError("empty key")
    return key


def signature(*, keys: Sequence[bytes], msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value: one `v1,<base64>` per key, in the order given."""
    if not keys:
        raise ValueError("at least one key is needed")
    content = b"%s.%d.%s" % (msg_id.encode("ascii"), timestamp, body)
    return " ".join(
        "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode("ascii") for key in keys
    )


def withheld_signature(*, key_count: int) -> str:
    """The `webhook-signature` value's shape with no signature in it: `v1,<withheld>` per key."""
    return " ".join(["v1," + WITHHELD] * key_count)


def signature_headers(
    *, keys: Sequence[bytes], msg_id: str, timestamp: int, body: bytes, withhold: bool = False
) -> dict[str, str]:
    """The three headers of a signed call; with `withhold`, the signature's shape only (nothing is signed)."""
    return {
        SIGNATURE_ID_HEADER: msg_id,
        SIGNATURE_TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: withheld_signature(key_count=len(keys))
        if withhold
        else signature(keys=keys, msg_id=msg_id, timestamp=timestamp, body=body),
    }
