"""The API's JSON answers: DRF's JSONRenderer's text, written by orjson.

The standard library's encoder, which DRF's renderer runs, took a tenth of a page's CPU
(docs/benchmarks/api.md). orjson writes the same compact UTF-8 text for the types it knows
(str, int, bool, None, dict, list, tuple, UUID and their subclasses); datetimes, dates and
times, decimals, lazy strings and whatever else DRF's encoder knows go through that encoder's
`default`, as DRF's renderer would send them. What orjson refuses (an integer past 64 bits, a
key that is not text, nesting past 254 levels) and an indented answer are DRF's renderer's
whole, as is every answer when DRF's JSON settings (UNICODE_JSON, COMPACT_JSON, STRICT_JSON)
or the encoder class are not DRF's defaults. Two differences stay, both for floats: one is written
in its shortest form, which differs from DRF's text only below 1e-4 or from 1e16 up (1e-05 is
0.00001, 1e+16 is 1e16: the same numbers), and a NaN or an infinity, which DRF refuses with an
error, is written as null. The API's one float answer, a rate limit's `per_second` (0.01 to
10,000), is written as DRF writes it; its number fields refuse NaN and infinities on input
(api/json_fields.py). A `RawJSON` value is JSON text already written (a page of tasks the
database wrote) and goes into the answer as it is; DRF's renderer gets it parsed.
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework import renderers
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
# DRF escapes these two for JavaScript, which reads them as line ends inside a string.
_LINE_SEPARATORS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


class RawJSON:
    """JSON text already written, to be put into an answer as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_drfs_default = JSONEncoder().default


def _default(value: Any) -> Any:
    return orjson.Fragment(value.text) if isinstance(value, RawJSON) else _drfs_default(value)


def _parsed(data: Any) -> Any:
    """`data` with each RawJSON read back into values, for DRF's renderer."""
    if isinstance(data, RawJSON):
        return orjson.loads(data.text)
    if isinstance(data, dict):
        return {key: _parsed(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_parsed(value) for value in data]
    return data


class JSONRenderer(renderers.JSONRenderer):
    def _drfs_defaults(self) -> bool:
        """orjson writes what DRF's defaults write: UTF-8, compact, its encoder's types."""
        return not self.ensure_ascii and self.compact and self.strict and self.encoder_class is JSONEncoder

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None) -> bytes:
        if (
            data is None
            or not self._drfs_defaults()
            or self.get_indent(accepted_media_type, renderer_context or {}) is not None
        ):
            return super().render(_parsed(data), accepted_media_type, renderer_context)
        try:
            text = orjson.dumps(data, default=_default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(_parsed(data), accepted_media_type, renderer_context)
        for raw, escaped in _LINE_SEPARATORS:
            if raw in text:
                text = text.replace(raw, escaped)
        return text
