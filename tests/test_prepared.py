"""database.prepared runs a text as the connection's prepared statement, and as text where it cannot."""

from __future__ import annotations

import uuid

import pytest
from django.db import DatabaseError, connection

from database import prepared

pytestmark = pytest.mark.django_db

# A `%` the driver doubles, values of each kind, and a LIMIT value, as the task page has them.
SQL = (
    "SELECT DATE_FORMAT('2030-01-02 03:04:05', '%%Y-%%m-%%dT%%H:%%i:%%s'), %s, %s, HEX(%s) "
    "FROM (SELECT 1 UNION ALL SELECT 2) AS two LIMIT %s"
)
PARAMS = ['it\'s 100% "quoted" \\ %s', 7, b"\x00\x01'", 1]
NAME = "test_prepared_statement"


def _run(name: str = NAME, sql: str = SQL) -> tuple[tuple[object, ...], list[str]]:
    """The rows, and the first word of each statement sent (a failed one too)."""
    sent: list[str] = []

    def record(execute, sql, params, many, context):
        sent.append(sql.split(" ", 1)[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record), connection.cursor() as cursor:
        prepared.execute(cursor, name=name, sql=sql, params=PARAMS)
        rows = cursor.fetchall()
    return rows, sent


def _as_text() -> tuple[object, ...]:
    with connection.cursor() as cursor:
        cursor.execute(SQL, PARAMS)
        return cursor.fetchall()


def test_the_first_use_prepares_and_later_ones_only_execute_with_the_texts_result() -> None:
    name = f"test_prepared_{uuid.uuid4().hex}"  # one this session has not prepared

    first, statements = _run(name)
    again, statements_again = _run(name)

    assert first == again == _as_text() == (("2030-01-02T03:04:05", PARAMS[0], 7, "0001" + "27"),)
    assert statements == ["PREPARE", "EXECUTE"]
    assert statements_again == ["EXECUTE"]


def test_a_session_that_lost_the_statement_prepares_it_again() -> None:
    _run()
    with connection.cursor() as cursor:
        cursor.execute(f"DEALLOCATE PREPARE {NAME}")

    rows, statements = _run()

    assert rows == _as_text() and statements == ["EXECUTE", "PREPARE", "EXECUTE"]


def test_an_error_of_the_statement_itself_is_raised() -> None:
    with pytest.raises(DatabaseError) as raised:
        _run(name="test_prepared_bad", sql="SELECT * FROM no_such_table WHERE a = %s AND b = %s AND c = %s LIMIT %s")
    assert raised.value.args[0] == 1146  # no such table, from PREPARE: not sent again as text


def test_the_server_text_has_a_question_mark_for_each_value_and_one_percent_for_two() -> None:
    assert prepared.server_text("SELECT '%%s', %s, '100%%', %s") == "SELECT '%s', ?, '100%', ?"


class _Connection:
    """A driver connection's stand-in (the module keeps each one's prepared names)."""


class _Cursor:
    """A cursor on a MariaDB connection that records its statements; PREPARE fails with `refusal`."""

    def __init__(self, refusal: int = prepared.ER_MAX_PREPARED_STMT_COUNT_REACHED, **db: object) -> None:
        features = type("Features", (), {"executes_prepared_with_values": db.pop("executes", True)})()
        fields = {"vendor": "mysql", "mysql_is_mariadb": True, "settings_dict": {"CONN_MAX_AGE": 60}, **db}
        self.db = type("Db", (), {**fields, "features": features, "connection": _Connection()})()
        self.refusal = refusal
        self.sent: list[str] = []

    def execute(self, sql: str, params: object) -> None:
        self.sent.append(sql.split(" ", 1)[0])
        if sql.startswith("PREPARE"):
            raise DatabaseError(self.refusal, "refused")


def test_a_connection_whose_server_refuses_one_more_statement_runs_texts_and_says_so_once(caplog) -> None:
    cursor = _Cursor()

    prepared.execute(cursor, name=NAME, sql=SQL, params=PARAMS)
    prepared.execute(cursor, name="another", sql=SQL, params=PARAMS)

    assert cursor.sent == ["PREPARE", "SELECT", "SELECT"]
    assert [record.event for record in caplog.records] == ["statement_not_prepared"]


def test_any_other_error_of_prepare_is_raised() -> None:
    with pytest.raises(DatabaseError):
        prepared.execute(_Cursor(refusal=1064), name=NAME, sql=SQL, params=PARAMS)


@pytest.mark.parametrize(
    "db",
    [{"executes": False}, {"mysql_is_mariadb": False}, {"settings_dict": {"CONN_MAX_AGE": 0}}],
    ids=["vtgate", "mysql", "a-connection-per-request"],
)
def test_where_preparing_gains_nothing_or_fails_the_text_runs(db) -> None:
    cursor = _Cursor(**db)

    prepared.execute(cursor, name=NAME, sql=SQL, params=PARAMS)

    assert cursor.sent == ["SELECT"]


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_it_again() -> None:
    _run()
    connection.close()

    rows, statements = _run()

    assert rows == _as_text()
    assert [word for word in statements if word != "SET"] == ["PREPARE", "EXECUTE"]  # SET: the new session's
