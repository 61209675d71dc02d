"""Named SQL blocks in .sql files: the loader the queue (jobs/sql) and the SQL history store share.

Each block starts with `-- name: <query_name>` and runs to the next one. The
owner of a folder reads it once at import (`load_queries(folder)`) and runs
`QUERIES["claim_select"]`. Multi-row statements mark where rows go with
`{rows}` (or `{ids}`), filled by `expand` with as many placeholder tuples as
there are rows, so the statement is still read in one place. Neutral (no app
imports), so neither app imports the other for it.
"""

from __future__ import annotations

import re
from pathlib import Path

_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split one .sql file into {name: statement}; duplicate names are an error."""
    queries: dict[str, str] = {}
    matches = list(_NAME.finditer(text))
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following else len(text)
        lines = text[match.end() : end].splitlines()
        # Comment lines after the statement introduce the next section: sent with it, they were
        # a second (empty) statement on every call, a round of parsing the server does not need.
        while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("--")):
            lines.pop()
        body = "\n".join(lines).strip().rstrip(";").strip()
        name = match.group(1)
        if name in queries:
            raise ValueError(f"duplicate query name {name!r}")
        if not body:
            raise ValueError(f"query {name!r} is empty")
        queries[name] = body
    return queries


def load_queries(folder: Path) -> dict[str, str]:
    """Every block of every .sql file in `folder`; a name defined twice is an error."""
    queries: dict[str, str] = {}
    for path in sorted(folder.glob("*.sql")):
        for name, body in parse_queries(path.read_text()).items():
            if name in queries:
                raise ValueError(f"query {name!r} is defined twice ({path.name})")
            queries[name] = body
    return queries


def placeholders(count: int, width: int) -> str:
    """`(%s, %s), (%s, %s)` for `count` rows of `width` values."""
    if count <= 0 or width <= 0:
        raise ValueError("a multi-row statement needs at least one row and one column")
    row = "(" + ", ".join(["%s"] * width) + ")"
    return ", ".join([row] * count)


def expand(query: str, count: int, width: int, marker: str = "rows") -> str:
    """Fill `{marker}` in `query` with `count` placeholder tuples of `width` values."""
    token = "{" + marker + "}"
    if token not in query:
        raise ValueError(f"query has no {token} marker")
    return query.replace(token, placeholders(count, width))
