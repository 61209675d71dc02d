"""JSON parsing for the whole API that turns every malformed body into a 400."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BoundedJSONParser(JSONParser):
    """DRF's JSONParser, plus: nesting deep enough to exhaust the recursion limit is a 400, not a 500.

    The stdlib decoder raises RecursionError (not ValueError) for `[[[[...`, which DRF lets through.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
