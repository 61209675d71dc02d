"""The queue's statements, read once from jobs/sql/*.sql, and what is generated from them.

Statements take named parameters (`%(worker_id)s`) in the .sql files and from the
callers. Some are completed here, once: the per-priority probe (one range read
per level of `tasks.priority.PRIORITIES`, joined by UNION ALL) and the job
record's column list. Each statement is then compiled once into the driver's
positional form (`Statement`): a call binds its named values in order and fills
its multi-row marker (`{ids}`, `{rows}`) with as many placeholder groups as
there are rows, or `{json}` with one, the rows as a JSON document that the
statement reads through JSON_TABLE. Named values cost a dict lookup each at bind
time, which on the executor's hottest path (a 500-result write) cost far more CPU
than the positional form (docs/benchmarks-notes.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from database.sqlfiles import load_queries, placeholders
from domain.records import sql_columns
from tasks.priority import PRIORITIES

QUERIES = load_queries(Path(__file__).resolve().parent.parent / "sql")


def _without_comments(query: str) -> str:
    return "\n".join(line for line in query.splitlines() if not line.lstrip().startswith("--"))


# A block named in another as `{name}` is written into it, `{name:value}` with the template's one
# `{slot}` set to value: a figure several statements share (jobs/sql/figures.sql) is defined once.
_INCLUDE = re.compile(r"\{(\w+)(?::(\w+))?\}")
_TEMPLATES = ("status_count", "newest_dead_jobs", "calendar_skip_reason")  # included only, never run alone


def _include(text: str) -> str:
    def fill(match: re.Match[str]) -> str:
        name, value = match.groups()
        if name not in QUERIES:
            return match.group(0)  # a marker ({ids}, {json}) or a template's own slot
        body = _include(_without_comments(QUERIES[name]))
        if value is None:
            return body
        slots = {slot for slot in re.findall(r"\{(\w+)\}", body) if slot not in QUERIES}
        if len(slots) != 1:
            raise ValueError(f"{name}: a template takes one slot, found {sorted(slots)}")
        return body.replace("{" + slots.pop() + "}", value)

    # Comment lines keep their braces: a comment may name a block without pulling it in.
    return "\n".join(line if line.lstrip().startswith("--") else _INCLUDE.sub(fill, line) for line in text.splitlines())


QUERIES.update({name: _include(text) for name, text in QUERIES.items()})
for _template in _TEMPLATES:
    del QUERIES[_template]


# One probe per priority level, built once from the single definition of the range (its
# comment once, not once per level: the probe runs on every poll).
_PROBE = _without_comments(QUERIES["claim_due_priority_probe"])
QUERIES["claim_due_priorities"] = "\nUNION ALL\n".join(
    f"({_PROBE.replace('{priority}', str(priority))})" for priority in PRIORITIES
)
del QUERIES["claim_due_priority_probe"]  # a template, not a statement
# The job record's columns, from its one definition.
QUERIES["archive_select"] = QUERIES["archive_select"].replace("{record_columns}", sql_columns())

_NAMED = re.compile(r"%\((\w+)\)s")
_MARKER = re.compile(r"\{(ids|rows|json)\}")


def json_rows(rows: Sequence[Sequence[Any]]) -> str:
    """`rows` as one JSON array of arrays, what a statement's `JSON_TABLE({json}, '$[*]' ...)` reads.

    Bytes (ids) become hex (the statement UNHEXes them), a datetime its text (naive: UTC, as
    `literal` writes it), a bool 0 or 1; None is null. One string for the server to parse instead of
    a derived table of one `SELECT` per row, which cost the server several times more to build
    (docs/benchmarks-notes.md).
    """
    return json.dumps(
        [[_json_value(value) for value in row] for row in rows], ensure_ascii=False, separators=(",", ":")
    )


def _json_value(value: Any) -> Any:
    kind = type(value)
    if kind is bytes:
        return value.hex()
    if kind is datetime:
        return (value if value.tzinfo is None else value.replace(tzinfo=None)).isoformat(" ")
    if kind is bool:
        return int(value)
    return value


@dataclass(frozen=True)
class Statement:
    """A statement compiled to positional placeholders, around at most one multi-row marker."""

    name: str
    head: str  # the text before the marker (all of it when there is none)
    tail: str  # the text after it
    head_names: tuple[str, ...]  # the named values in head, in order
    tail_names: tuple[str, ...]
    marker: str | None

    @classmethod
    def compile(cls, name: str, text: str) -> Statement:
        markers = _MARKER.findall(text)
        if len(markers) > 1:
            raise ValueError(f"{name}: at most one multi-row marker, found {markers}")
        head, _, tail = text.partition("{" + markers[0] + "}") if markers else (text, "", "")
        return cls(
            name=name,
            head=_NAMED.sub("%s", head),
            tail=_NAMED.sub("%s", tail),
            head_names=tuple(_NAMED.findall(head)),
            tail_names=tuple(_NAMED.findall(tail)),
            marker=markers[0] if markers else None,
        )

    def bind(
        self,
        values: Mapping[str, Any] | None = None,
        rows: Sequence[Sequence[Any]] = (),
        *,
        columns: tuple[str, ...] = ("id",),
    ) -> tuple[str, list[Any]]:
        """The SQL and the positional parameters for `values` (by name) and `rows` (of `columns`).

        The marker becomes `%s, %s` (`{ids}`), `(%s, %s), (%s, %s)` (`{rows}`), or one `%s`
        bound to the rows as a JSON document (`{json}`, `json_rows`).
        """
        values = values or {}
        params = [values[name] for name in self.head_names]
        if self.marker is None:
            if rows:
                raise ValueError(f"{self.name} takes no rows")
            return self.head, params
        if not rows:
            raise ValueError(f"{self.name} needs at least one row")
        width = len(columns)
        for row in rows:
            if len(row) != width:
                raise ValueError(f"{self.name}: a row of {len(row)} values, expected {width}")
        if self.marker == "json":
            params.append(json_rows(rows))
            params.extend(values[name] for name in self.tail_names)
            return self.head + "%s" + self.tail, params
        for row in rows:
            params.extend(row)
        params.extend(values[name] for name in self.tail_names)
        ids = self.marker == "ids" and width == 1
        fill = ", ".join(["%s"] * len(rows)) if ids else placeholders(len(rows), width)
        return self.head + fill + self.tail, params

    def render(
        self,
        db: Any,
        values: Mapping[str, Any] | None = None,
        rows: Sequence[Sequence[Any]] = (),
        *,
        columns: tuple[str, ...] = ("id",),
    ) -> str:
        """`bind()`'s statement with its values written in, for `cursor.execute(sql)` without parameters.

        mysqlclient writes every parameter into the text on the client anyway (`query % literals`);
        this does the same with a faster literal for the types the big batches carry (see
        `literal`). `db` is the MySQLdb connection (`django.db.connection.connection`).
        """
        sql, params = self.bind(values, rows, columns=columns)
        return sql % tuple([literal(db, value) for value in params])


def literal(db: Any, value: Any) -> str:
    """`value` as the SQL literal mysqlclient's `literal()` writes, cheaper for bytes, int, None,
    datetime, bool and str.

    The driver's per-value dispatch (isinstance chain, `_binary'...'` through the escaper) was
    the bulk of a 500-result batch's binding: 8 values a row. Bytes (the ids) become hex
    `X'..'`, a binary string as `_binary'..'` is, with nothing to escape; a datetime the text
    the driver writes (`isoformat`, in C, instead of its Python `format_TIMESTAMP`); text goes
    through the connection's own escaper (charset- and sql_mode-aware) as the driver does; any
    other type (date, float, Decimal, ...) is the driver's.
    """
    kind = type(value)
    if kind is bytes:
        return f"X'{value.hex()}'"
    if kind is int:
        return str(value)
    if value is None:
        return "NULL"
    if kind is datetime:
        # The driver's text ('YYYY-MM-DD hh:mm:ss[.ffffff]', any zone dropped), formatted in C.
        return f"'{(value if value.tzinfo is None else value.replace(tzinfo=None)).isoformat(' ')}'"
    if kind is bool:
        return "1" if value else "0"
    encoding = db.encoding
    # The driver is untyped: name the text's type here instead of silencing the check.
    text: str
    if kind is str:
        text = db.string_literal(value.encode(encoding)).decode(encoding)
    else:
        text = db.literal(value).decode(encoding)
    return text


STATEMENTS = {name: Statement.compile(name, text) for name, text in QUERIES.items()}
