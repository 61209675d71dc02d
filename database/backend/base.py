"""Django's MySQL backend, with each transaction begun by START TRANSACTION (ENGINE `database.backend`).

Django's `atomic()` turns the session's autocommit off (`SET autocommit=0`), and after the
COMMIT or ROLLBACK turns it back on (`SET autocommit=1`): three round trips around a
transaction's statements. Begun with START TRANSACTION instead (Django's hook for it,
`_start_transaction_under_autocommit`), the session stays in autocommit, the COMMIT or ROLLBACK
ends the transaction, and turning autocommit back on has nothing to send (the driver reads the
session's autocommit from the server's last answer and skips a SET that changes nothing): two
round trips. The statements between run alike: the session's isolation level, the same locks,
savepoints. A caller that turns autocommit off itself (`transaction.set_autocommit(False)`)
still sends `SET autocommit=0`, and its way back on `SET autocommit=1`.

One difference: what ends a transaction inside `atomic()` (a deadlock's rollback, an implicit
commit by DDL or LOCK TABLES) leaves the session in autocommit, where the stock backend's later
statements would join a new transaction. Django refuses statements after an error inside
`atomic()` (a savepoint's rollback fails, the block is marked for rollback), the queue's claim
retries its whole `atomic()` on a deadlock, and nothing runs DDL inside one. The server must
keep `completion_type` at its default (NO_CHAIN).

The START TRANSACTION itself waits for the transaction's first statement and goes with it, in one
round trip, and a block that sends nothing sends neither it nor its end (database/backend/connection.py).
A kept connection's health check looks at its socket instead of sending a ping (`is_usable`).
"""

from __future__ import annotations

import os
import select

import MySQLdb
from django.db.backends.mysql import base
from django.db.backends.utils import debug_transaction

from database.backend.connection import Connection


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict) -> Connection:
        connection = Connection(**conn_params)
        if connection.encoders.get(bytes) is bytes:  # as Django's own (mysqlclient's bytes encoder)
            connection.encoders.pop(bytes)
        connection.socket_inode = os.fstat(connection.fileno()).st_ino  # read by is_usable
        return connection

    def _start_transaction_under_autocommit(self) -> None:
        # Logged and captured as "BEGIN", as Django records the SET autocommit=0 it replaces; sent
        # with the transaction's first statement.
        with debug_transaction(self, "BEGIN"):
            self.connection.begin()

    def is_usable(self) -> bool:
        """Whether the kept connection still works, without a round trip.

        Between requests the server sends nothing on a connection it keeps: a server that closed it
        (a restart, wait_timeout, KILL) leaves its end of the socket readable, and so does an answer
        nobody read, which a ping would take for its own. Either way the connection is dropped and
        the next statement opens another; go-sql-driver/mysql checks a pooled connection the same
        way. A server gone without a word (its host lost) fails the first statement as it would
        have failed the ping. After a lost connection the driver has closed the socket but still
        names its number, which a later file may have taken: the socket's inode tells them apart.
        """
        try:
            descriptor = self.connection.fileno()
            if os.fstat(descriptor).st_ino != self.connection.socket_inode:
                return False
        except (MySQLdb.Error, OSError):
            return False
        poller = select.poll()
        poller.register(descriptor, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
