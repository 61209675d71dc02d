"""The architecture, enforced: every package is known, imports run one way, and only jobs.queue runs SQL on jobs.

Layers, lowest first (docs/architecture.md draws them):

- outbound, domain, database: import nothing first-party. outbound is what a call sends
  (egress policy, headers, signature, the request on the wire); domain the shared
  primitives (ids, tenant ids, the job record, the attempt log, the secret_ref grammar);
  database the .sql loader, the DATETIME converter and the database's reachability.
- api: the tenant API's HTTP plumbing (auth, problems, parsers, params, openapi, probes...).
- vault, then tasks and history (neither imports the other), then signing, then jobs.
- console (the support console) and workers (the loops) stand on jobs.
- jobsched_project: configuration only; it reads the api's classes by dotted path and
  history.backends to validate a setting. bench stands above all.

A module may import its own package and the packages listed for it, never another one; the
tests may import anything. A package that is not listed fails, so a new one gets its place here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_PRIMITIVES = {"outbound", "domain", "database"}
ALLOWED: dict[str, set[str]] = {
    "outbound": set(),
    "domain": set(),
    "database": set(),
    # Vitess: the keyspace router, the vschema derived from the models, the backend (by dotted path).
    "sharding": set(),
    "api": {"domain", "database"},
    "vault": {"domain", "database", "api"},
    "tasks": {*_PRIMITIVES, "api", "vault", "sharding"},
    "history": {"domain", "database"},
    "signing": {*_PRIMITIVES, "api", "tasks", "vault"},
    "ratelimits": {*_PRIMITIVES, "api"},
    "jobs": {*_PRIMITIVES, "api", "tasks", "history", "signing", "sharding", "ratelimits"},
    "console": {*_PRIMITIVES, "tasks", "history", "signing", "jobs", "ratelimits", "notifications"},
    # The tenant's notifications: its subscription API and deliveries, on the queue's events.
    "notifications": {*_PRIMITIVES, "api", "tasks", "history", "signing", "jobs", "sharding"},
    "workers": {*_PRIMITIVES, "api", "vault", "tasks", "history", "signing", "jobs", "sharding", "ratelimits"},
    "jobsched_project": {"api", "history"},
    "bench": {
        *_PRIMITIVES,
        *("api", "vault", "tasks", "history", "signing", "jobs", "console", "workers", "sharding", "tests"),
        "ratelimits",
    },
}
# Listed before it is built (the outbound package comes with the executor's split): absent is fine.
NOT_YET_BUILT = {"outbound"}
FIRST_PARTY = {*ALLOWED, "tests"}
# Settings validate every setting at start, so they read the few constant modules that own a
# setting's valid values; each of these imports nothing of Django or of the apps.
SETTINGS_READS = {"history.backends"}
# Adapters of the history port that only history itself may name (the rest use history.base and history.stores).
PRIVATE_MODULES = {"history.sql_store": "history"}
# SQL text on the jobs table, in any case, whatever joins it (`STRAIGHT_JOIN jobs` is a join too).
# A name that goes on (`jobs.queue`, `jobs/sql`) is a module or a path, not the table.
JOBS_SQL = re.compile(r"\b(FROM|UPDATE|INTO|JOIN|STRAIGHT_JOIN)\s+`?jobs`?(?![\w./`])", re.IGNORECASE)


def present_packages(root: Path) -> set[str]:
    """The top-level Python packages of the tree (a folder with an __init__.py)."""
    return {path.parent.name for path in root.glob("*/__init__.py")}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported_names(path: Path) -> set[str]:
    """Every absolute module name `path` imports (at any depth: imports inside functions count too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def forbidden_imports(package: str) -> list[str]:
    found = []
    for path in _modules(package):
        for name in sorted(imported_names(path)):
            top = name.split(".")[0]
            settings_read = path == ROOT / "jobsched_project" / "settings.py" and name in SETTINGS_READS
            if top in FIRST_PARTY and top != package and top not in ALLOWED[package] and not settings_read:
                found.append(f"{path.relative_to(ROOT)} imports {name}")
            owner = PRIVATE_MODULES.get(name)
            # The benches measure each adapter as such, so they may build one directly.
            if owner is not None and package not in {owner, "bench"}:
                found.append(f"{path.relative_to(ROOT)} imports {name} (private to {owner})")
    return found


def test_every_package_has_a_place():
    """A package the layers do not list fails; a listed one may be missing only while it is not built yet."""
    present = present_packages(ROOT)
    assert present - FIRST_PARTY == set()
    assert set(ALLOWED) - present <= NOT_YET_BUILT


def test_the_check_sees_an_unknown_package(tmp_path):
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "docs").mkdir()  # a folder without __init__.py is no package
    assert present_packages(tmp_path) - FIRST_PARTY == {"helpers"}


def test_the_layers_form_no_circle():
    """Allowed imports run one way: following them from any package never comes back to it."""

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(ALLOWED[start])
        while todo:
            package = todo.pop()
            if package not in seen and package in ALLOWED:
                seen.add(package)
                todo.extend(ALLOWED[package])
        return seen

    assert [package for package in ALLOWED if package in reaches(package)] == []


def test_outbound_imports_nothing_of_the_project():
    assert ALLOWED["outbound"] == set()


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_one_way(package):
    if package in NOT_YET_BUILT and not (ROOT / package).is_dir():
        return  # listed, not built yet: nothing to check (test_every_package_has_a_place bounds this)
    assert forbidden_imports(package) == []


@pytest.mark.parametrize("module", sorted(SETTINGS_READS))
def test_what_the_settings_read_imports_nothing_of_django_or_the_apps(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    assert {name.split(".")[0] for name in imported_names(path)} & (FIRST_PARTY | {"django"}) == set()


def test_the_check_sees_a_forbidden_edge(tmp_path, monkeypatch):
    """A history module importing jobs is reported (the check is not vacuous)."""
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "bad.py").write_text("def f():\n    from jobs.queue import claim_due\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert forbidden_imports("history") == ["history/bad.py imports jobs.queue"]


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of `tree`: prose ("turns due tasks into jobs"), never run."""
    holders = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, holders)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def holds_jobs_sql(path: Path) -> bool:
    """Whether a string literal in `path` (not a docstring) is SQL on the jobs table."""
    tree = ast.parse(path.read_text(), filename=str(path))
    prose = _docstrings(tree)
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in prose
        and JOBS_SQL.search(node.value)
        for node in ast.walk(tree)
    )


def test_only_the_queue_runs_sql_on_jobs():
    """The .sql files are read by jobs.queue alone; no other module of any package carries a statement on jobs."""
    holders = [
        str(path.relative_to(ROOT))
        for package in sorted(present_packages(ROOT) - {"bench", "tests"})
        for path in _modules(package)
        if (ROOT / "jobs" / "queue") not in path.parents and holds_jobs_sql(path)
    ]
    assert holders == []
    assert holds_jobs_sql(ROOT / "jobs" / "queue" / "statements.py") is False  # it loads them, holds none
    assert holds_jobs_sql(ROOT / "bench" / "executor.py")  # the bench's fixtures: the check sees SQL


def test_only_the_queue_folder_holds_sql_files_on_jobs():
    outside = [
        str(path.relative_to(ROOT))
        for path in sorted(ROOT.glob("*/**/*.sql"))
        if path.parent != ROOT / "jobs" / "sql" and ".venv" not in path.parts and JOBS_SQL.search(path.read_text())
    ]
    assert outside == []


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1 FROM jobs WHERE id = %s",
        "update jobs set status = 'dead'",
        "select id from `jobs` where status = 'dead'",
        "UPDATE JSON_TABLE(%s, '$[*]' COLUMNS (id CHAR(32) PATH '$[0]')) AS s STRAIGHT_JOIN jobs AS j ON j.id = s.id",
        "insert into jobs (id) values (%s)",
    ],
)
def test_the_sql_check_sees_every_spelling(tmp_path, text):
    path = tmp_path / "module.py"
    path.write_text(f"QUERY = {text!r}\n")
    assert holds_jobs_sql(path)


@pytest.mark.parametrize("text", ["imported from jobs.queue", "see jobs/sql/retry.sql", "the dead jobs of a tenant"])
def test_the_sql_check_passes_over_module_names(tmp_path, text):
    path = tmp_path / "module.py"
    path.write_text(f"NOTE = {text!r}\n")
    assert not holds_jobs_sql(path)


def test_the_sql_check_passes_over_docstrings(tmp_path):
    path = tmp_path / "module.py"
    path.write_text('"""Turns due tasks into jobs."""\n\n\ndef tick():\n    """Select from jobs, in prose."""\n')
    assert not holds_jobs_sql(path)
