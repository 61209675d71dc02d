"""docs/sdk.md and the CLI reference pages: their reference sections are what docgen makes from the code now."""

from __future__ import annotations

from jobsched_client import docgen
from tests.server import REPO


def test_the_committed_references_match_the_generated_ones(capsys) -> None:
    assert docgen.main(["--check", str(REPO / "docs")]) == 0, capsys.readouterr().err


def test_the_cli_reference_covers_every_command() -> None:
    reference = docgen.cli_reference() + docgen.cli_tasks_reference()
    for path in (
        "jobsched tasks edit",
        "jobsched crontab apply",
        "jobsched secrets put",
        "jobsched signing-secrets create",
    ):
        assert f"### `{path}`" in reference
    assert "| 4 |" in reference  # the exit codes table
