"""The README is a front door and the docs pages stay readable; the quickstart's commands are checked.

The quickstart itself runs against a real `make run` in .ci/docs.sh (scripts/check_quickstart.py);
these tests keep the README's shape and its links honest without starting anything.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _checker():
    spec = importlib.util.spec_from_file_location("check_quickstart", ROOT / "scripts" / "check_quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_read_in_five_minutes():
    assert len(README.splitlines()) <= 200


def test_the_quickstart_is_at_most_ten_commands_starting_with_make_run():
    checker = _checker()
    first, second = checker.quickstart_blocks(README)
    assert checker.commands(first) == ["make run"]
    assert 1 + len(checker.commands(second)) <= 10


def test_every_readme_command_is_run_by_the_quickstart_check_or_named_with_its_script():
    checker = _checker()
    first, second = checker.quickstart_blocks(README)
    run_there = {*checker.commands(first), *checker.commands(second), "make docs"}
    for block in checker.sh_blocks(README):
        for command in checker.commands(block):
            assert command in run_there or command in checker.COVERED_ELSEWHERE, command
    for script in {value.split()[0] for value in checker.COVERED_ELSEWHERE.values()}:
        assert (ROOT / script).exists()


def test_every_relative_link_in_the_readme_and_changelog_exists():
    for name in ("README.md", "CHANGELOG.md"):
        text = (ROOT / name).read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not target.startswith(("http://", "https://")):
                assert (ROOT / target).exists(), (name, target)


@pytest.mark.parametrize("page", sorted((ROOT / "docs").rglob("*.md")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_documentation_page_is_over_300_lines(page):
    assert len(page.read_text().splitlines()) <= 300


def test_the_documentation_site_lists_every_page_in_its_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (ROOT / "docs").rglob("*.md"):
        assert str(page.relative_to(ROOT / "docs")) in nav, page
