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
"""

from __future__ import annotations

from django.db.backends.mysql import base
from django.db.backends.utils import debug_transaction


class DatabaseWrapper(base.DatabaseWrapper):
    def _start_transaction_under_autocommit(self) -> None:
        # Logged and captured as "BEGIN", as Django records the SET autocommit=0 it replaces.
        with debug_transaction(self, "BEGIN"), self.wrap_database_errors:
            self.connection.query("START TRANSACTION")
