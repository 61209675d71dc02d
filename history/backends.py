"""The names `HISTORY_BACKEND` accepts: one list, read by the settings check and by the store loader.

A short name for each adapter a deployment can run, or the dotted path of any
`HistoryStore` subclass (as Django picks email and cache backends). The
in-memory store has no short name on purpose: it is a test fake, one per
process, so under `HISTORY_BACKEND` the archiver and the API would each keep
their own history and lose it at exit. Tests choose it by its dotted path
(`history.memory.InMemoryHistoryStore`) or with `set_history_store`.

Plain Python (no Django), so `jobsched_project/settings.py` can import it.
"""

from __future__ import annotations

BACKENDS = {
    "sql": "history.sql_store.SqlHistoryStore",
    "cassandra": "history.cassandra_store.CassandraHistoryStore",
}


def backend_path(name: str) -> str:
    """The dotted path `name` stands for; ValueError if it is neither a short name nor a dotted path."""
    if name in BACKENDS:
        return BACKENDS[name]
    if isinstance(name, str) and "." in name:
        return name
    names = ", ".join(repr(short) for short in BACKENDS)
    raise ValueError(f"must be one of {names} or a HistoryStore class's dotted path, got {name!r}")
