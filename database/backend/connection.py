"""The driver's connection, holding statements whose answer nobody waits for until the next one goes.

A statement costs its round trip more than its work: under load the worker sleeps until the
server's answer, the server's thread wakes for it, and both run again on busy cores
(docs/benchmarks/issue33-round-trips.md). Two kinds of statement need no answer before the next
one is sent:

- `START TRANSACTION`: `atomic()` holds it, and it goes with the transaction's first statement.
  A transaction that sends nothing sends neither it nor its COMMIT or ROLLBACK.
- an INSERT that cannot wait on a lock (`database.inserts.insert_row(deferred=True)`): it goes
  with the transaction's next statement, or just before its COMMIT.

Held statements and the next one are written together (`send_query` each) and their answers read
in order: one round trip. MariaDB runs each command it reads whatever the one before answered, so
when a held statement fails the statements sent with it have run too. Its error is raised once
every answer is read, from the statement it went with or from the commit, which then sends no
COMMIT; `atomic()` rolls the transaction back. That holds only while the failure leaves the
transaction open: an error that ends it (a deadlock's victim, a lock wait under
innodb_rollback_on_timeout) would let the statements after it run and commit on their own, since
the session stays in autocommit. Hence a held INSERT must be one that waits on no lock. One case is
left to the caller, as when a COMMIT's answer is lost: a `START TRANSACTION` that fails on a live
connection (a KILL QUERY aimed at that instant) lets the statement with it run and commit on its
own, and the caller sees the error. A round trip left half read (an exception other than the
driver's between the sends and the last answer) closes the connection: its answers would be
taken for the next statement's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import MySQLdb
from django.db.backends.mysql.base import CursorWrapper
from MySQLdb.connections import Connection as DriverConnection

BEGIN = b"START TRANSACTION"


class Connection(DriverConnection):
    """mysqlclient's connection with held statements (see the module); the backend makes these."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.held: list[bytes] = []  # before the driver's __init__, which sets autocommit
        self.socket_inode = 0  # set by the backend when it opens the connection
        super().__init__(*args, **kwargs)

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
        if isinstance(query, str):
            query = query.encode(self.encoding)
        elif isinstance(query, bytearray):
            query = bytes(query)
        held, self.held = self.held, []
        in_sync = False
        try:
            error = self._send_and_read([*held, query], answers_to_read=len(held))
            if error is not None:
                try:  # the statement's own answer, dropped
                    self.read_query_result()
                    self.discard_result()
                except MySQLdb.Error:
                    pass
                in_sync = True
                raise error
            try:
                self.read_query_result()  # the statement's answer, left for the cursor as query() leaves it
            except MySQLdb.Error:
                in_sync = True
                raise
            in_sync = True
        finally:
            if not in_sync:
                self.close()
        return None

    def commit(self) -> None:
        if self.held == [BEGIN]:
            self.held = []  # nothing was sent: the server has no transaction to end
            return
        self._send_held()  # no COMMIT after a held statement that failed: atomic() rolls back
        super().commit()

    def rollback(self) -> None:
        held, self.held = self.held, []
        if held and held[0] is BEGIN:
            return  # never sent: the server has no transaction to roll back
        super().rollback()

    def autocommit(self, on: bool) -> None:
        # SET autocommit=1 would commit what is open: what is held goes first.
        self._send_held()
        super().autocommit(on)

    def close(self) -> None:
        # A round trip left half read closes the connection itself; Django's close comes after.
        if self.open:
            super().close()

    def _send_held(self) -> None:
        """Send what is held, alone, and raise the first error among the answers."""
        if not self.held:
            return
        held, self.held = self.held, []
        in_sync = False
        try:
            error = self._send_and_read(held, answers_to_read=len(held))
            in_sync = True
        finally:
            if not in_sync:
                self.close()
        if error is not None:
            if isinstance(error, MySQLdb.OperationalError) and error.args and error.args[0] in _INTEGRITY_CODES:
                raise MySQLdb.IntegrityError(*error.args) from error  # as Django's cursor maps them
            raise error

    def _send_and_read(self, statements: list[bytes], *, answers_to_read: int) -> MySQLdb.Error | None:
        """Send `statements` back to back, then read the first `answers_to_read` answers (each one's
        rows dropped); the first error among them, if any."""
        for statement in statements:
            self.send_query(statement)
        first: MySQLdb.Error | None = None
        for _ in range(answers_to_read):
            try:
                self.read_query_result()
                self.discard_result()
            except MySQLdb.OperationalError as exc:
                first = first or exc
                if exc.args and exc.args[0] in _CONNECTION_LOST:
                    break  # nothing more will come
            except MySQLdb.Error as exc:
                first = first or exc
        return first


# CR_SERVER_GONE_ERROR, CR_SERVER_LOST: the connection is gone, no answer will follow.
_CONNECTION_LOST = (2006, 2013)
# The errors Django's MySQL cursor raises as IntegrityError (a NULL in NOT NULL, a CHECK constraint).
_INTEGRITY_CODES = CursorWrapper.codes_for_integrityerror
