"""HISTORY_BACKEND chooses the store: a short name or a dotted path."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils.module_loading import import_string

from history.backends import BACKENDS, backend_path
from history.base import HistoryStore
from history.cassandra_store import CassandraHistoryStore
from history.memory import InMemoryHistoryStore
from history.sql_store import SqlHistoryStore
from history.stores import get_history_store, load_store, set_history_store


@pytest.fixture(autouse=True)
def fresh_store():
    set_history_store(None)
    yield
    set_history_store(None)


def test_the_default_backend_is_the_sql_store():
    assert isinstance(get_history_store(), SqlHistoryStore)


def test_the_store_is_built_once_per_process():
    assert get_history_store() is get_history_store()


def test_short_names_choose_each_adapter():
    assert isinstance(load_store("sql"), SqlHistoryStore)
    with override_settings(CASSANDRA_HOSTS=["127.0.0.1"]):
        assert isinstance(load_store("cassandra"), CassandraHistoryStore)  # connects lazily


def test_a_dotted_path_chooses_any_store_class():
    assert isinstance(load_store("history.memory.InMemoryHistoryStore"), InMemoryHistoryStore)


@pytest.mark.parametrize("name", ["memory", "mongodb", ""])
def test_a_name_that_is_not_a_deployable_backend_is_refused(name):
    # The in-memory fake has no short name: it is chosen by its dotted path, never by a deployment.
    with pytest.raises(ValueError, match="'sql', 'cassandra'"):
        load_store(name)


def test_every_short_name_is_one_the_settings_check_accepts():
    assert set(BACKENDS) == {"sql", "cassandra"}
    for name, path in BACKENDS.items():
        assert backend_path(name) == path
        assert issubclass(import_string(path), HistoryStore)


def test_a_path_to_something_else_is_refused():
    with pytest.raises(TypeError, match="not a HistoryStore"):
        load_store("history.base.Position")


def test_changing_the_setting_rebuilds_the_store():
    with override_settings(HISTORY_BACKEND="history.memory.InMemoryHistoryStore"):
        assert isinstance(get_history_store(), InMemoryHistoryStore)
    assert isinstance(get_history_store(), SqlHistoryStore)
