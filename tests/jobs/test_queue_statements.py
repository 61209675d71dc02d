"""The queue's statements as loaded and compiled: named parameters in the text, the probe from the priority range;
rendered with their values written in, read back alike."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import pytest
from django.db import connection

from domain.records import STORED_FIELDS
from jobs.queue.statements import QUERIES, STATEMENTS, Statement, literal
from tasks.priority import PRIORITIES


def test_every_statement_takes_named_parameters_only():
    for name, query in QUERIES.items():
        assert "%s" not in query, name


def test_the_probe_reads_each_priority_level_once_in_order():
    probe = QUERIES["claim_due_priorities"]
    levels = [int(level) for level in re.findall(r"WHERE pending_priority = (\d+)", probe)]
    assert levels == list(PRIORITIES)
    assert probe.count("UNION ALL") == len(PRIORITIES) - 1
    assert probe.count("%(lookahead_seconds)s") == len(PRIORITIES)
    assert "--" not in probe  # the comment is sent once per poll, not once per level


def test_the_archive_select_reads_the_records_stored_fields():
    selected = QUERIES["archive_select"].split("SELECT", 1)[1].split("FROM", 1)[0]
    assert [column.strip() for column in selected.split(",")] == [
        *STORED_FIELDS,
        "fence",
    ]  # the delete guard's token follows the record


def test_a_statement_binds_its_names_in_order_around_the_rows():
    statement = Statement.compile("t", "UPDATE t SET w = %(worker)s WHERE id IN ({ids}) AND n < %(n)s")
    sql, params = statement.bind({"n": 9, "worker": "w-1"}, [(1,), (2,)])
    assert sql == "UPDATE t SET w = %s WHERE id IN (%s, %s) AND n < %s"
    assert params == ["w-1", 1, 2, 9]


def test_rows_become_tuples():
    delete = Statement.compile("d", "DELETE FROM t WHERE (id, n) IN ({rows})")
    assert delete.bind(rows=[(1, 2), (3, 4)], columns=("id", "n")) == (
        "DELETE FROM t WHERE (id, n) IN ((%s, %s), (%s, %s))",
        [1, 2, 3, 4],
    )


def test_json_rows_become_one_parameter_of_a_json_document_between_the_names():
    statement = Statement.compile(
        "j", "SELECT * FROM JSON_TABLE({json}, '$[*]' COLUMNS (a INT PATH '$[0]')) AS r WHERE w = %(w)s"
    )
    at = datetime(2027, 1, 1, 9, 0, 0, 1500, tzinfo=UTC)
    sql, params = statement.bind({"w": "x"}, [(b"\x00\xff", at, True, None, 'a "q" é')], columns=tuple("abcde"))
    assert sql == "SELECT * FROM JSON_TABLE(%s, '$[*]' COLUMNS (a INT PATH '$[0]')) AS r WHERE w = %s"
    assert params == ['[["00ff","2027-01-01 09:00:00.001500",1,null,"a \\"q\\" é"]]', "x"]  # naive UTC, as literal()
    with pytest.raises(ValueError, match="expected 5"):
        statement.bind({"w": "x"}, [(1,)], columns=tuple("abcde"))


@pytest.mark.django_db
def test_json_rows_read_back_through_json_table_as_they_were():
    rows = [
        (uuid.uuid4().bytes, 'it\'s 100% \\ "quoted" \x00 é 🎉 %s', datetime(2027, 1, 1, 9, 0, 0, 1500), None, False)
    ]
    statement = Statement.compile(
        "j",
        "SELECT UNHEX(r.id), r.s, r.at, r.n, r.flag FROM JSON_TABLE({json}, '$[*]' COLUMNS (id CHAR(32) PATH '$[0]',"
        " s LONGTEXT PATH '$[1]', at DATETIME(6) PATH '$[2]', n INT PATH '$[3]', flag INT PATH '$[4]')) AS r",
    )
    with connection.cursor() as cursor:
        cursor.execute(statement.render(connection.connection, None, rows, columns=tuple("abcde")))
        (row,) = cursor.fetchall()
    assert (bytes(row[0]), *row[1:]) == (rows[0][0], rows[0][1], rows[0][2], None, 0)


def test_the_compiled_claim_probe_binds_the_lookahead_once_per_level():
    sql, params = STATEMENTS["claim_due_priorities"].bind({"lookahead_seconds": 1.5})
    assert params == [1.5] * len(PRIORITIES)
    assert "%(" not in sql


def test_a_missing_value_a_missing_row_or_a_row_of_the_wrong_width_is_refused():
    statement = Statement.compile("t", "UPDATE t SET w = %(worker)s WHERE id IN ({ids})")
    with pytest.raises(KeyError):
        statement.bind({}, [(1,)])
    with pytest.raises(ValueError, match="at least one row"):
        statement.bind({"worker": "w"}, [])
    with pytest.raises(ValueError, match="expected 1"):
        statement.bind({"worker": "w"}, [(1, 2)])
    with pytest.raises(ValueError, match="at most one"):
        Statement.compile("t", "{ids} {rows}")


@pytest.mark.django_db
def test_a_rendered_statement_reads_back_every_value_as_the_drivers_binding_does():
    tricky = 'it\'s 100% \\ "quoted" \x00 é 🎉 %s %(x)s'
    rows = [
        (b"\x00'\\\"%s\xff" + bytes(range(8)), 7, tricky, None, -3, datetime(2027, 1, 1, 9, 0, 0, 1500), True),
        (uuid.uuid4().bytes, 0, "", None, 2**40, datetime(2028, 2, 29), False),
    ]
    columns = ("b", "i", "s", "n", "big", "at", "flag")
    statement = Statement.compile(
        "t",
        "WITH r (b, i, s, n, big, at, flag) AS (VALUES {rows}) SELECT r.*, '5%%' AS pct FROM r"
        " WHERE %(one)s = 1 ORDER BY r.i DESC",
    )
    with connection.cursor() as cursor:
        cursor.execute(*statement.bind({"one": 1}, rows, columns=columns))
        bound = cursor.fetchall()
        cursor.execute(statement.render(connection.connection, {"one": 1}, rows, columns=columns))
        rendered = cursor.fetchall()
    assert rendered == bound
    assert [row[:3] for row in rendered] == [row[:3] for row in rows]
    assert rendered[0][-1] == "5%"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "value",
    [
        datetime(2027, 1, 1, 9, 0, 0),
        datetime(2027, 1, 1, 9, 0, 0, 1500),
        datetime(2027, 1, 1, 9, 0, 0, 999999),
        datetime(999, 12, 31, 23, 59, 59),
        datetime(2027, 1, 1, 9, 0, 0, 250000, tzinfo=UTC),  # the driver drops the zone; so do we
        True,
        False,
    ],
)
def test_a_datetime_or_a_flag_is_written_as_the_drivers_own_literal(value):
    connection.ensure_connection()
    db = connection.connection
    assert literal(db, value) == db.literal(value).decode(db.encoding)
