"""A statement the server parses once per connection: PREPARE on first use, then EXECUTE with the values.

MariaDB parses every statement's text anew. For a long statement that costs more than the read
itself: the task page's text, about 5 KB since the database writes its JSON, took more of the
server's CPU to parse than to read and write 50 tasks (docs/benchmarks/issue33-page-sql.md).
A prepared statement keeps the parsed text in the connection's session (about 230 KB of the
server's memory for the page's), and `EXECUTE name USING <values>` is a short text.

Only MariaDB takes values after USING (MySQL takes user variables only), and only a connection
that outlives its request gains (CONN_MAX_AGE > 0). Behind vtgate, which plans a prepared text
itself, the shards parse it anyway (`DatabaseFeatures.executes_prepared_with_values`). Elsewhere,
and on a connection whose server refuses one more statement (`max_prepared_stmt_count`), the
text runs as it is.
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError

logger = logging.getLogger(__name__)

ER_UNKNOWN_STMT_HANDLER = 1243  # the session lost it (DEALLOCATE, a reset session)
ER_UNSUPPORTED_PS = 1295
ER_MAX_PREPARED_STMT_COUNT_REACHED = 1461
_REFUSALS = (ER_UNSUPPORTED_PS, ER_MAX_PREPARED_STMT_COUNT_REACHED)
_DRIVER_FORMAT = re.compile(r"%([%s])")


@dataclass
class _Session:
    names: set[str] = field(default_factory=set)
    refused: bool = False


# By the driver's connection object: a new connection is a new session with nothing prepared.
_SESSIONS: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()


def execute(cursor: Any, *, name: str, sql: str, params: Sequence[Any]) -> None:
    """Run `sql` (the driver's format: `%s` a value, `%%` a `%`) as the connection's prepared statement `name`.

    `name` stands for this one text on every connection: a changed text needs a new name.
    """
    if not _prepares(cursor.db):
        cursor.execute(sql, params)
        return
    session = _SESSIONS.setdefault(cursor.db.connection, _Session())
    if session.refused or (name not in session.names and not _prepare(cursor, session, name, sql)):
        cursor.execute(sql, params)
        return
    execute_sql = f"EXECUTE {name}" + (" USING " + ", ".join(["%s"] * len(params)) if params else "")
    try:
        cursor.execute(execute_sql, params)
        return
    except DatabaseError as exc:
        if not exc.args or exc.args[0] != ER_UNKNOWN_STMT_HANDLER:
            raise
    session.names.discard(name)  # the session lost it: prepared again
    if _prepare(cursor, session, name, sql):
        cursor.execute(execute_sql, params)
    else:
        cursor.execute(sql, params)


def _prepares(db: Any) -> bool:
    return (
        db.vendor == "mysql"
        and db.mysql_is_mariadb
        and db.settings_dict.get("CONN_MAX_AGE") != 0
        and getattr(db.features, "executes_prepared_with_values", True)
    )


def _prepare(cursor: Any, session: _Session, name: str, sql: str) -> bool:
    """Prepare `name` in the session; False (logged once per connection) if the server refuses one more."""
    try:
        cursor.execute(f"PREPARE {name} FROM %s", [server_text(sql)])
    except DatabaseError as exc:
        if not exc.args or exc.args[0] not in _REFUSALS:
            raise
        session.refused = True
        logger.warning(
            "statements not prepared on this connection; sent as text",
            extra={"event": "statement_not_prepared", "statement": name, "reason": str(exc)},
        )
        return False
    session.names.add(name)
    return True


def server_text(sql: str) -> str:
    """The driver's text as the server prepares it: `?` for each value, `%` for `%%`."""
    return _DRIVER_FORMAT.sub(lambda match: "%" if match[1] == "%" else "?", sql)
