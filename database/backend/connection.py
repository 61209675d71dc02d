"""The driver's connection, holding statements whose answer nobody waits for until the next one goes.

A statement costs its round trip more than its work: under load the worker sleeps until the
server's answer, the server's thread wakes for it, and both run again on busy cores
(docs/benchmarks/issue33-round-trips.md). Two kinds of statement need no answer before the next
one is sent:

- `START TRANSACTION`: `atomic()` holds it, and it goes with the transaction's first statement.
  A transaction that sends nothing sends neither it nor its COMMIT or ROLLBACK.
- an INSERT of a row whose key the caller made (`database.inserts.insert_row(deferred=True)`):
  it goes with the transaction's next statement, or just before its COMMIT.

Held statements and the next one are written together (`send_query` each) and their answers read
in order: one round trip. MariaDB runs each command it reads whatever the one before answered, so
when a held statement fails the statements sent with it have run too. Its error is raised once
every answer is read, from the statement it went with or from COMMIT, which is then never sent;
`atomic()` rolls the transaction back. One case is left to the caller, as when a COMMIT's answer is
lost: a `START TRANSACTION` that fails on a live connection (a KILL QUERY aimed at that instant)
lets the statement with it run and commit on its own, and the caller sees the error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import MySQLdb
from MySQLdb.connections import Connection as DriverConnection

BEGIN = b"START TRANSACTION"


class Connection(DriverConnection):
    """mysqlclient's connection with held statements (see the module); the backend makes these."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held: list[bytes] = []
        self.socket_inode = 0  # set by the backend when it opens the connection

    def begin(self) -> None:
        """Begin a transaction with the next statement sent (the backend's atomic() calls this)."""
        self.held.append(BEGIN)

    def hold(self, query: str, params: Sequence[Any]) -> bytes:
        """Send `query` with `params` (bound as the driver's cursor binds them) with the next statement.

        Only inside a transaction: its error is raised by the next statement or the COMMIT. Returns
        the statement as it will be sent.
        """
        statement = query.encode(self.encoding) % tuple(map(self.literal, params))
        self.held.append(statement)
        return statement

    def query(self, query: bytes | bytearray | str) -> None:
        if not self.held:
            return super().query(query)
        if isinstance(query, bytearray):
            query = bytes(query)
        held, self.held = self.held, []
        for statement in held:
            self.send_query(statement)
        self.send_query(query)
        error = self._read_answers(len(held))
        if error is None:
            return self.read_query_result()
        try:
            self.read_query_result()
            self.discard_result()
        except MySQLdb.Error:
            pass
        raise error

    def commit(self) -> None:
        if self.held and self.held[0] is BEGIN and len(self.held) == 1:
            self.held = []  # nothing was sent: the server has no transaction to end
            return
        if self.held:
            held, self.held = self.held, []
            for statement in held:
                self.send_query(statement)
            error = self._read_answers(len(held))
            if error is not None:
                raise error  # no COMMIT: atomic() rolls back
        super().commit()

    def rollback(self) -> None:
        held, self.held = self.held, []
        if held and held[0] is BEGIN:
            return  # never sent: the server has no transaction to roll back
        super().rollback()

    def _read_answers(self, count: int) -> MySQLdb.Error | None:
        """Read `count` answers (each one's rows dropped); the first error among them, if any."""
        first: MySQLdb.Error | None = None
        for _ in range(count):
            try:
                self.read_query_result()
                self.discard_result()
            except MySQLdb.OperationalError as exc:
                if first is None:
                    first = exc
                if exc.args and exc.args[0] in _CONNECTION_LOST:
                    break  # nothing more will come
            except MySQLdb.Error as exc:
                if first is None:
                    first = exc
        return first


# CR_SERVER_GONE_ERROR, CR_SERVER_LOST: the connection is gone, no answer will follow.
_CONNECTION_LOST = (2006, 2013)
