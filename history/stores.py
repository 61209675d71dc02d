"""Which history store this process uses: `settings.HISTORY_BACKEND`.

The setting is a short name or the dotted path of a `HistoryStore` subclass
(`history.backends`, the one list the settings check reads too).
One instance per process (the Cassandra one holds a connection pool); tests
swap it with `override_settings(HISTORY_BACKEND=...)` or `set_history_store`.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from history.backends import backend_path
from history.base import HistoryStore

_lock = threading.Lock()
_store: HistoryStore | None = None


def load_store(name: str) -> HistoryStore:
    """A new store for a short name or a dotted path (ValueError for anything else)."""
    store_class = import_string(backend_path(name))
    if not (isinstance(store_class, type) and issubclass(store_class, HistoryStore)):
        raise TypeError(f"HISTORY_BACKEND: {name!r} is not a HistoryStore")
    return store_class()


def get_history_store() -> HistoryStore:
    """The process's store, built on first use."""
    global _store
    with _lock:
        if _store is None:
            _store = load_store(settings.HISTORY_BACKEND)
        return _store


def set_history_store(store: HistoryStore | None) -> None:
    """Use `store` from now on (None: rebuild from the setting on next use)."""
    global _store
    with _lock:
        previous, _store = _store, store
    if previous is not None and previous is not store:
        previous.close()


def _reset_on_setting_change(*, setting: str, **kwargs) -> None:
    if setting in {"HISTORY_BACKEND", "CASSANDRA_HOSTS", "CASSANDRA_KEYSPACE", "HISTORY_TTL_SECONDS"}:
        set_history_store(None)


setting_changed.connect(_reset_on_setting_change)
