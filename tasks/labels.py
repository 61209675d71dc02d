"""Labels on tasks: a small map of short keys and values a tenant filters and groups its tasks by.

Pure rules (no ORM): the grammar, the bounds, a merge patch onto the current labels,
and the `?label=key=value` selector. Keys follow Kubernetes' shape (an optional
DNS-like prefix and a slash, then a name), so tools that already write such labels
fit; values are short tokens, possibly empty.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_LABELS = 16
MAX_KEY_LENGTH = 63
MAX_VALUE_LENGTH = 63
MAX_SELECTORS = 8
_NAME = r"[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?"
_KEY = re.compile(rf"({_NAME}/)?{_NAME}", re.ASCII)
_VALUE = re.compile(r"([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?", re.ASCII)
KEY_RULE = f"1-{MAX_KEY_LENGTH} of a-z 0-9 . _ - (an optional prefix/ too), starting and ending alphanumeric"
VALUE_RULE = f"0-{MAX_VALUE_LENGTH} of A-Z a-z 0-9 . _ -, starting and ending alphanumeric"


class LabelError(ValueError):
    """A label refused; `field` names it as the API reports it (`labels.env`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _check_key(key: str, field: str) -> None:
    if len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        raise LabelError(field, f"a label key is {KEY_RULE}")


def _check_value(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise LabelError(field, "a label value is a string")
    if len(value) > MAX_VALUE_LENGTH or not _VALUE.fullmatch(value):
        raise LabelError(field, f"a label value is {VALUE_RULE}")
    return value


def validate_labels(value: Any) -> dict[str, str]:
    """The labels as stored, keys sorted; LabelError naming the first bad one."""
    if not isinstance(value, dict):
        raise LabelError("labels", 'must be an object of strings, e.g. {"env": "prod"}')
    if len(value) > MAX_LABELS:
        raise LabelError("labels", f"at most {MAX_LABELS} labels")
    labels: dict[str, str] = {}
    for key in sorted(value, key=str):
        field = f"labels.{str(key)[: MAX_KEY_LENGTH + 1]}"
        _check_key(key, field)
        labels[key] = _check_value(value[key], field)
    return labels


def merge_labels(current: dict[str, str], patch: Any) -> Any:
    """RFC 7396 onto the labels: a key with a string sets it, a key with null removes it."""
    if not isinstance(patch, dict):
        return patch  # validate_labels names the wrong type
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def parse_selector(raw: list[str]) -> dict[str, str]:
    """`?label=env=prod&label=team=ops` → {"env": "prod", "team": "ops"} (all must hold); LabelError on `label`."""
    if len(raw) > MAX_SELECTORS:
        raise LabelError("label", f"at most {MAX_SELECTORS} label selectors")
    wanted: dict[str, str] = {}
    for item in raw:
        key, equals, value = item.partition("=")
        if not equals:
            raise LabelError("label", "write it as key=value, e.g. ?label=env=prod")
        _check_key(key, "label")
        _check_value(value, "label")
        if wanted.get(key, value) != value:
            raise LabelError("label", f"{key} is selected with two values")
        wanted[key] = value
    return wanted


def read_labels(text: str | None) -> dict[str, str]:
    """The labels a job carries (JSON text copied from its task when it was made); {} for none or older jobs."""
    if not text:
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}
