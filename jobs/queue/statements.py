"""The queue's statements, read once from jobs/sql/*.sql, and what is generated from them.

Statements take named parameters (`%(worker_id)s`). Some are completed here, once:
the per-priority probe (one range read per level of `tasks.priority.PRIORITIES`,
joined by UNION ALL), the job record's column list (`{record_columns}`); and per
call the multi-row markers (`{ids}`, `{rows}`, `{results}`),
which `expand_rows` fills with numbered placeholders (`%(id_0)s, %(id_1)s, ...`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jobsched_project.records import sql_columns
from jobsched_project.sqlfiles import load_queries
from tasks.priority import PRIORITIES

QUERIES = load_queries(Path(__file__).resolve().parent.parent / "sql")


def _without_comments(query: str) -> str:
    return "\n".join(line for line in query.splitlines() if not line.lstrip().startswith("--"))


# One probe per priority level, built once from the single definition of the range (its
# comment once, not once per level: the probe runs on every poll).
_PROBE = _without_comments(QUERIES["claim_due_priority_probe"])
QUERIES["claim_due_priorities"] = "\nUNION ALL\n".join(
    f"({_PROBE.replace('{priority}', str(priority))})" for priority in PRIORITIES
)
# The job record's columns, from its one definition.
QUERIES["archive_select"] = QUERIES["archive_select"].replace("{record_columns}", sql_columns())


def expand_rows(
    query: str, marker: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, select: bool = False
) -> tuple[str, dict[str, Any]]:
    """Fill `{marker}` with one placeholder group per row, and the parameters they name.

    `(%(id_0)s, %(status_0)s), (%(id_1)s, ...)` by default; with `select`, a derived
    table `SELECT %(id_0)s AS id, ... UNION ALL SELECT %(id_1)s, ...` whose first row
    names the columns. A single column is written bare (`%(id_0)s, %(id_1)s`), for `IN (...)`.
    """
    token = "{" + marker + "}"
    if token not in query:
        raise ValueError(f"query has no {token} marker")
    if not rows or not columns:
        raise ValueError("a multi-row statement needs at least one row and one column")
    params: dict[str, Any] = {}
    groups: list[str] = []
    for n, row in enumerate(rows):
        names = [f"{column}_{n}" for column in columns]
        params.update(zip(names, row, strict=True))
        if select:
            # The first row names the derived table's columns; the rest follow by position.
            named = [f"%({name})s AS {column}" for name, column in zip(names, columns, strict=True)]
            groups.append("SELECT " + ", ".join(named if n == 0 else (f"%({name})s" for name in names)))
        elif len(columns) == 1:
            groups.append(f"%({names[0]})s")
        else:
            groups.append("(" + ", ".join(f"%({name})s" for name in names) + ")")
    return query.replace(token, (" UNION ALL " if select else ", ").join(groups)), params
