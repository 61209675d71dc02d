"""A task as the JSON TaskOutput describes, written by the database: a page of tasks in UTC.

A page read as rows and written out by task_json spends most of its request turning 50 rows of
45 columns into Python values and those into dicts (docs/benchmarks/api.md). Here the
database writes each row's JSON object as text in the read that finds it, and the page is those
texts joined. Each member below writes what the task_json line of the same name writes, for
times in UTC (the API's zone; in any other zone the page takes task_json's path);
tests/tasks/test_task_json.py checks the two give the same values in the same key order for
tasks of every shape. Written with CONCAT and JSON_QUOTE, not JSON_OBJECT: MariaDB's JSON
functions cost the database more than the Python they replace (docs/benchmarks/api.md).

The headers' and the labels' stored text goes in as it is, where task_json writes each value
as text: it relies on their one writer's rule, objects of strings (the input's validators;
the admin shows them read-only). Every nullable column is guarded (IFNULL or IF), since one
NULL makes a CONCAT NULL. The expressions read the page's table as `t`; `%` is doubled for the
driver's parameters.
"""

from __future__ import annotations

from tasks.models import TaskStatus
from tasks.schedule.every import UNITS


def _text(column: str) -> str:
    """A text column as a JSON string; null stays null."""
    return f"IFNULL(JSON_QUOTE({column}), 'null')"


def _number(column: str) -> str:
    return f"IFNULL({column}, 'null')"


def _iso(column: str) -> str:
    """datetime.isoformat() of a UTC time with "Z", quoted: microseconds only when there are some; null stays null."""
    return (
        f"IFNULL(IF(MICROSECOND({column}) = 0, DATE_FORMAT({column}, '\"%%Y-%%m-%%dT%%H:%%i:%%sZ\"'), "
        f"DATE_FORMAT({column}, '\"%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ\"')), 'null')"
    )


def _uuid(column: str) -> str:
    """A BINARY(16) id as str(uuid.UUID), quoted: lowercase hex, 8-4-4-4-12."""
    parts = ", ".join(f"HEX(SUBSTRING({column}, {start}, {size}))" for start, size in _UUID_PARTS)
    return f"CONCAT('\"', LOWER(CONCAT_WS('-', {parts})), '\"')"


_UUID_PARTS = ((1, 4), (5, 2), (7, 2), (9, 2), (11, 6))


def _every(column: str) -> str:
    """format_every, quoted: each unit's count when not zero ("1h30m"), "0m" when none is."""
    parts = []
    rest = column
    for unit, size in UNITS.items():  # largest first, each the rest of the one before, as divmod's loop
        count = f"({rest}) DIV {size}"
        parts.append(f"IF({count} > 0, CONCAT({count}, '{unit}'), '')")
        rest = f"({rest}) MOD {size}"
    text = f"CONCAT({', '.join(parts)})"
    return f"CONCAT('\"', IF({text} = '', '0m', {text}), '\"')"


def _object(members: dict[str, str]) -> str:
    return "CONCAT('{', " + ", ',', ".join(f"'\"{name}\":', {value}" for name, value in members.items()) + ", '}')"


def _if_set(name: str, condition: str, value: str) -> str:
    """A member written only when `condition` holds (the schedule's optional parts)."""
    return f"IF({condition}, CONCAT(',\"{name}\":', {value}), '')"


def _schedule() -> str:
    kind = (
        f"CASE WHEN t.run_at IS NOT NULL THEN CONCAT('\"run_at\":', {_iso('t.run_at')}) "
        f"WHEN t.every_seconds IS NOT NULL THEN CONCAT('\"every\":', {_every('t.every_seconds')}, "
        f"',\"anchor\":', {_iso('t.anchor')}, ',\"timezone\":', {_text('t.timezone')}) "
        f"ELSE CONCAT('\"cron\":', {_text('t.cron_expression')}, ',\"timezone\":', {_text('t.timezone')}) END"
    )
    optional = [
        _if_set("window_seconds", "t.window_seconds > 0", "t.window_seconds"),
        _if_set("starts_at", "t.starts_at IS NOT NULL", _iso("t.starts_at")),
        _if_set("ends_at", "t.ends_at IS NOT NULL", _iso("t.ends_at")),
        _if_set("max_runs", "t.max_runs IS NOT NULL", "t.max_runs"),
        _if_set(
            "exclude_calendars",
            "JSON_TYPE(t.exclude_calendars) = 'ARRAY' AND JSON_LENGTH(t.exclude_calendars) > 0",
            "t.exclude_calendars",
        ),
    ]
    return f"CONCAT('{{', {kind}, {', '.join(optional)}, '}}')"


def _last_run() -> str:
    run = _object(
        {
            "job_id": _uuid("t.last_run_job_id"),
            "scheduled_at": _iso("t.last_run_scheduled_at"),
            "status": _text("t.last_run_status"),
            "http_status": _number("t.last_run_http_status"),
            "at": _iso("t.last_run_at"),
        }
    )
    return f"IF(t.last_run_job_id IS NULL, 'null', {run})"


TASK_JSON = _object(
    {
        "id": _uuid("t.id"),
        "name": _text("t.name"),
        "status": _text("t.status"),
        "version": "t.version",
        "schedule": _schedule(),
        "http": _object(
            {
                "url": _text("t.http_url"),
                "method": _text("t.http_method"),
                "headers": "t.http_headers",
                "body": _text("t.http_body"),
            }
        ),
        "timeout_seconds": "t.timeout_seconds",
        "max_attempts": "t.max_attempts",
        "backoff_base_seconds": "t.backoff_base_seconds",
        "priority": "t.priority",
        "secret_ref": _text("t.secret_ref"),
        "missed_runs": _text("t.missed_runs"),
        "auto_pause_after": _number("t.auto_pause_after"),
        "overlap": _text("t.overlap"),
        "delete_after_completion": "IF(t.delete_after_completion, 'true', 'false')",
        # runs_scheduled_json and paused_reason_json (tasks/serializers.py)
        "runs_scheduled": "IF(t.max_runs IS NOT NULL OR t.ends_at IS NOT NULL, t.runs_scheduled, 'null')",
        "paused_reason": f"IF(t.status = '{TaskStatus.PAUSED.value}', {_text('t.paused_reason')}, 'null')",
        "consecutive_failures": "t.consecutive_failures",
        "labels": "t.labels",
        "last_run": _last_run(),
        "next_run_at": _iso("t.next_run_at"),
        "created_at": _iso("t.created_at"),
        "updated_at": _iso("t.updated_at"),
    }
)
