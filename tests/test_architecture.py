"""The architecture, enforced: imports run one way between the apps, and only jobs.queue runs SQL on jobs.

Layers, lowest first: jobsched_project (settings and neutral helpers: ids, the job
record, the .sql loader, the admin base, tenant ids, the secret_ref grammar) ← vault
(tenants' secrets: tasks checks a secret_ref against it, the executor resolves it) ←
tasks and history (neither imports the other) ← signing (signing secrets, sealed by
vault; reads tasks.headers) ← jobs ← workers ← bench. A module may import its own
package and the layers below it, never above; the tests may import anything.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ALLOWED = {
    "jobsched_project": set(),
    "vault": {"jobsched_project"},
    "tasks": {"jobsched_project", "vault"},
    "history": {"jobsched_project"},
    "signing": {"jobsched_project", "tasks", "vault"},
    "jobs": {"jobsched_project", "tasks", "history", "signing"},
    "workers": {"jobsched_project", "tasks", "history", "jobs", "vault", "signing"},
    "bench": {"jobsched_project", "tasks", "history", "jobs", "signing", "workers", "tests"},
}
FIRST_PARTY = {*ALLOWED, "tests"}
# Settings validate every setting at start, so they read the few constant modules that own a
# setting's valid values; each of these imports nothing of Django or of the apps.
SETTINGS_READS = {"history.backends"}
# Adapters of the history port that only history itself may name (the rest use history.base and history.stores).
PRIVATE_MODULES = {"history.sql_store": "history"}
# SQL text on the jobs table (keywords upper case, as every statement here is written).
JOBS_SQL = re.compile(r"\b(FROM|UPDATE|INTO|JOIN)\s+`?jobs`?\b")


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


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_one_way(package):
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


def holds_jobs_sql(path: Path) -> bool:
    """Whether a string literal in `path` is SQL on the jobs table."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, str) and JOBS_SQL.search(node.value)
        for node in ast.walk(tree)
    )


def test_only_the_queue_runs_sql_on_jobs():
    """The .sql files are read by jobs.queue alone; no other module carries a statement on jobs."""
    holders = [
        str(path.relative_to(ROOT))
        for package in ("jobsched_project", "tasks", "history", "jobs", "workers")
        for path in _modules(package)
        if (ROOT / "jobs" / "queue") not in path.parents and holds_jobs_sql(path)
    ]
    assert holders == []
    assert holds_jobs_sql(ROOT / "jobs" / "queue" / "statements.py") is False  # it loads them, holds none
    assert holds_jobs_sql(ROOT / "bench" / "executor.py")  # the bench's fixtures: the check sees SQL
