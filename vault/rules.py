"""What a secret's name and value may be: the API checks them on PUT, the executor before it sends.

A name is a `secret_ref` (the one grammar, domain.secret_refs), and
also a file name under SECRETS_DIR (vault.mounted): never a path. The value is
sent as one header (`Authorization`), so it is one line of printable ASCII: a
newline would inject headers.
"""

from __future__ import annotations

from domain.secret_refs import MAX_SECRET_REF_LENGTH, RULE, is_secret_ref

MAX_NAME_LENGTH = MAX_SECRET_REF_LENGTH
MAX_VALUE_BYTES = 8192
NAME_RULE = f"must be {RULE}"
VALUE_RULE = f"1-{MAX_VALUE_BYTES} characters of printable ASCII on one line"


def is_valid_name(value: object) -> bool:
    return is_secret_ref(value)


def is_valid_value(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_VALUE_BYTES
        and value.strip() == value
        and all(" " <= char <= "~" for char in value)
    )
