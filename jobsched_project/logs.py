"""One log line per event: `time level logger message key=value ...`.

Structured fields come from `extra={...}` so that loops can log what a tick did
(`event=tick jobs=1000 seconds=0.41`) without building strings by hand.
"""

from __future__ import annotations

import logging

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class StructuredFormatter(logging.Formatter):
    """Render the record's `extra` fields as sorted key=value pairs."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}
        if fields:
            line += " " + " ".join(f"{k}={_value(v)}" for k, v in sorted(fields.items()))
        return line


def _value(value: object) -> str:
    text = str(value)
    return repr(text) if (" " in text or not text) else text
