"""The API's JSON answers: DRF's JSONRenderer's text, written by orjson.

The standard library's encoder, which DRF's renderer runs, took a tenth of a page's CPU
(docs/benchmarks/api.md). orjson writes the same compact UTF-8 text for the types it knows
(str, int, bool, None, dict, list, tuple, UUID and their subclasses); datetimes, dates and
times, decimals, lazy strings and whatever else DRF's encoder knows go through that encoder's
`default`, as DRF's renderer would send them. What orjson refuses (an integer past 64 bits, a
key that is not text, nesting past 254 levels) and an indented answer are DRF's renderer's
whole. Two differences stay, both for floats, which no answer of the API holds today: a float is
written in its shortest form (1e-7 where DRF writes 1e-07, the same number), and a NaN or an
infinity, which DRF refuses with an error, is written as null (the API's number fields refuse
both on input, api/json_fields.py).
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework import renderers
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
# DRF escapes these two for JavaScript, which reads them as line ends inside a string.
_LINE_SEPARATORS = ((b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


class JSONRenderer(renderers.JSONRenderer):
    _default = staticmethod(JSONEncoder().default)

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None) -> bytes:
        if data is None or self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        try:
            text = orjson.dumps(data, default=self._default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(data, accepted_media_type, renderer_context)
        for raw, escaped in _LINE_SEPARATORS:
            if raw in text:
                text = text.replace(raw, escaped)
        return text
