"""The queue's statements as loaded: named parameters only, the probe generated from the priority range."""

from __future__ import annotations

import re

import pytest

from jobs.queue.statements import QUERIES, expand_rows
from jobsched_project.records import STORED_FIELDS
from tasks.priority import PRIORITIES


def test_every_statement_takes_named_parameters_only():
    for name, query in QUERIES.items():
        assert "%s" not in query, name


def test_the_probe_reads_each_priority_level_once_in_order():
    probe = QUERIES["claim_due_priorities"]
    levels = [int(level) for level in re.findall(r"AND priority = (\d+)", probe)]
    assert levels == list(PRIORITIES)
    assert probe.count("UNION ALL") == len(PRIORITIES) - 1
    assert probe.count("%(lookahead_seconds)s") == len(PRIORITIES)
    assert "--" not in probe  # the comment is sent once per poll, not once per level


def test_the_archive_select_reads_the_records_stored_fields():
    selected = QUERIES["archive_select"].split("SELECT", 1)[1].split("FROM", 1)[0]
    assert [column.strip() for column in selected.split(",")] == list(STORED_FIELDS)


def test_expand_rows_names_each_rows_values():
    query, params = expand_rows("DELETE FROM t WHERE (id, n) IN ({rows})", "rows", ("id", "n"), [(1, 2), (3, 4)])
    assert query == "DELETE FROM t WHERE (id, n) IN ((%(id_0)s, %(n_0)s), (%(id_1)s, %(n_1)s))"
    assert params == {"id_0": 1, "n_0": 2, "id_1": 3, "n_1": 4}


def test_expand_rows_writes_one_column_bare_and_a_derived_table_with_names_once():
    assert expand_rows("IN ({ids})", "ids", ("id",), [(1,), (2,)])[0] == "IN (%(id_0)s, %(id_1)s)"
    query, _ = expand_rows("JOIN ({results}) AS r", "results", ("id", "n"), [(1, 2), (3, 4)], select=True)
    assert query == "JOIN (SELECT %(id_0)s AS id, %(n_0)s AS n UNION ALL SELECT %(id_1)s, %(n_1)s) AS r"


@pytest.mark.parametrize(
    ("query", "rows", "columns"),
    [("SELECT 1", [(1,)], ("id",)), ("IN ({ids})", [], ("id",)), ("IN ({ids})", [(1, 2)], ("id",))],
)
def test_expand_rows_refuses_a_missing_marker_no_rows_or_a_row_of_the_wrong_width(query, rows, columns):
    with pytest.raises(ValueError):
        expand_rows(query, "ids", columns, rows)
