"""Log lines: `key=value` text for development, JSON lines for production (LOG_FORMAT).

Structured fields come from `extra={...}` so that loops can log what a tick did
(`event=tick jobs=1000 seconds=0.41`) without building strings by hand. Both
formats carry the request id of the request being served (request_ids.py).
In JSON a traceback is one string field (`exc_info`), never extra lines.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from pythonjsonlogger.json import JsonFormatter

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class StructuredFormatter(logging.Formatter):
    """Render the record's `extra` fields as sorted key=value pairs (values with spaces JSON-quoted)."""

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
    needs_quotes = not text or any(c in text for c in ' "=\\') or not text.isprintable()
    return json.dumps(text, ensure_ascii=False) if needs_quotes else text


class JsonLineFormatter(JsonFormatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, then the extra fields."""

    def __init__(self) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            json_ensure_ascii=False,
        )

    def add_fields(self, log_data: dict, record: logging.LogRecord, message_dict: dict) -> None:
        log_data["time"] = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        super().add_fields(log_data, record, message_dict)
