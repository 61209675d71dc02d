"""A Cassandra store that SIGKILLs its own process right after a history write, for crash tests.

Chosen as a child archiver's HISTORY_BACKEND by dotted path
(`tests.history.crashing_store.KillAfterHistoryWrite`), so the archiver dies exactly
between its Cassandra write and its MySQL delete, with no hook in production code.
"""

from __future__ import annotations

import os
import signal

from history.cassandra_store import CassandraHistoryStore


class KillAfterHistoryWrite(CassandraHistoryStore):
    def write_many(self, records):
        records = list(records)
        super().write_many(records)
        if records:
            os.kill(os.getpid(), signal.SIGKILL)
