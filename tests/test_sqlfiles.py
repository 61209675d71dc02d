"""The .sql files parse (the queue's and the SQL history store's), and multi-row statements expand as expected."""

from pathlib import Path

import pytest

from database.sqlfiles import expand, load_queries, parse_queries, placeholders

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("folder", ["jobs/sql", "history/sql"])
def test_every_sql_file_parses_into_named_non_empty_queries(folder):
    queries = load_queries(ROOT / folder)
    assert queries
    assert all(body and not body.endswith(";") for body in queries.values())


def test_a_name_defined_in_two_files_is_refused(tmp_path):
    (tmp_path / "a.sql").write_text("-- name: same\nSELECT 1;\n")
    (tmp_path / "b.sql").write_text("-- name: same\nSELECT 2;\n")
    with pytest.raises(ValueError, match="defined twice"):
        load_queries(tmp_path)


def test_blocks_are_split_on_name_comments():
    text = "-- name: first\nSELECT 1;\n\n-- name: second\nSELECT 2\n"
    assert parse_queries(text) == {"first": "SELECT 1", "second": "SELECT 2"}


def test_comments_after_a_statement_are_not_part_of_it():
    # They introduce the next section; sent along, they were a second, empty statement.
    text = (
        "-- name: first\n-- why\nSELECT 1\n-- inside\nFROM t;\n\n"
        "-- The next section.\n-- More.\n\n-- name: second\nSELECT 2\n"
    )
    assert parse_queries(text) == {"first": "-- why\nSELECT 1\n-- inside\nFROM t", "second": "SELECT 2"}


@pytest.mark.parametrize("folder", ["jobs/sql", "history/sql"])
def test_no_statement_ends_in_a_comment(folder):
    for body in load_queries(ROOT / folder).values():
        assert not body.splitlines()[-1].lstrip().startswith("--")


def test_a_duplicate_name_is_refused():
    with pytest.raises(ValueError, match="duplicate"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;")


def test_an_empty_block_is_refused():
    with pytest.raises(ValueError, match="empty"):
        parse_queries("-- name: a\n\n-- name: b\nSELECT 2;")


def test_expand_fills_rows_with_placeholder_tuples():
    assert placeholders(2, 3) == "(%s, %s, %s), (%s, %s, %s)"
    assert expand("DELETE FROM jobs WHERE (id, status) IN ({rows})", 2, 2) == (
        "DELETE FROM jobs WHERE (id, status) IN ((%s, %s), (%s, %s))"
    )
    with pytest.raises(ValueError):
        expand("SELECT 1", 1, 1)
    with pytest.raises(ValueError):
        placeholders(0, 1)
