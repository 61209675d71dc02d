"""JSON parsing for the whole API that turns every malformed body into a 400."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

NOT_TEXT = "is not valid Unicode text (it holds a lone surrogate escape)."


class BoundedJSONParser(JSONParser):
    """DRF's JSONParser, plus two bodies it lets through as 500s.

    - Nesting deep enough to exhaust the recursion limit: the stdlib decoder raises
      RecursionError, not ValueError.
    - Lone surrogates written as escapes (`"\\ud800"`): valid JSON but not text, so
      they could be neither stored in utf8mb4 nor echoed back in an error message.
      The 400 names the field that holds one.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        path = _surrogate_path(data)
        if path is not None:
            error: Any = [NOT_TEXT]
            for key in reversed(path):
                error = {key: error}
            raise ValidationError(error)
        return data


def _surrogate_path(value: Any, path: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The keys leading to the first string (or object key) that UTF-8 cannot encode."""
    if isinstance(value, str):
        return None if value.isascii() or _encodes(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            if not _encodes(key):
                return path or ("body",)
            found = _surrogate_path(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_path(item, (*path, f"[{index}]"))
            if found is not None:
                return found
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class MergePatchJSONParser(BoundedJSONParser):
    """`application/merge-patch+json` (RFC 7396): the same JSON, for the views that merge it."""

    media_type = "application/merge-patch+json"
