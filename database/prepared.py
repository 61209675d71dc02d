"""A statement the server parses once per connection: PREPARE on first use, then EXECUTE with the values.

MariaDB parses every statement's text anew. For a long statement that costs more than the read
itself: the task page's text, about 5 KB since the database writes its JSON, took more of the
server's CPU to parse than to read and write 50 tasks (docs/benchmarks/issue33-page-sql.md).
A prepared statement keeps the parsed text in the connection's session; `EXECUTE name USING
<values>` is a short text (MariaDB takes literals there, MySQL only user variables).

A session that lost the statement (a new connection) answers EXECUTE with error 1243, and the
statement is prepared then. Where the server cannot prepare it (`max_prepared_stmt_count`
reached) or the backend does not take MariaDB's EXECUTE (vtgate, whose parser wants user
variables and which plans the text itself: `DatabaseFeatures.executes_prepared_with_values`),
the text runs as it is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError

logger = logging.getLogger(__name__)

ER_UNKNOWN_STMT_HANDLER = 1243
_DRIVER_FORMAT = re.compile(r"%([%s])")


def execute(cursor: Any, *, name: str, sql: str, params: Sequence[Any]) -> None:
    """Run `sql` (the driver's format: `%s` a value, `%%` a `%`) as the connection's prepared statement `name`.

    `name` stands for this one text on every connection: a changed text needs a new name.
    """
    if not getattr(cursor.db.features, "executes_prepared_with_values", True):
        cursor.execute(sql, params)
        return
    execute_sql = f"EXECUTE {name}" + (" USING " + ", ".join(["%s"] * len(params)) if params else "")
    try:
        cursor.execute(execute_sql, params)
        return
    except DatabaseError as exc:
        if not exc.args or exc.args[0] != ER_UNKNOWN_STMT_HANDLER:
            raise
    try:
        cursor.execute(f"PREPARE {name} FROM %s", [server_text(sql)])
    except DatabaseError as exc:
        logger.warning(
            "statement not prepared; sent as text",
            extra={"event": "statement_not_prepared", "statement": name, "reason": str(exc)},
        )
        cursor.execute(sql, params)
        return
    cursor.execute(execute_sql, params)


def server_text(sql: str) -> str:
    """The driver's text as the server prepares it: `?` for each value, `%` for `%%`."""
    return _DRIVER_FORMAT.sub(lambda match: "%" if match[1] == "%" else "?", sql)
