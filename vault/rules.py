"""What a secret's name and value may be: the API checks them on PUT, the executor before it sends.

The name is also a file name under SECRETS_DIR (vault.mounted), so it is never
a path: no separator, no leading dot. The value is sent as one header
(`Authorization`), so it is one line of printable ASCII: a newline would inject headers.
"""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 255
MAX_VALUE_BYTES = 8192
NAME_RULE = "1-255 of A-Z a-z 0-9 _ . -, not starting with a dot or a dash"
VALUE_RULE = f"1-{MAX_VALUE_BYTES} characters of printable ASCII on one line"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}", re.ASCII)


def is_valid_name(value: object) -> bool:
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def is_valid_value(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_VALUE_BYTES
        and value.strip() == value
        and all(" " <= char <= "~" for char in value)
    )
