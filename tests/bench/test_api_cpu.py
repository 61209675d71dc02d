"""bench.api_cpu: a real run of both sides on MariaDB, and its refused options."""

from __future__ import annotations

import json

import pytest

from bench import api_cpu
from bench.api_cpu import ROOT


def test_a_round_creates_reads_and_edits_through_each_checkouts_application(bench_database, tmp_path, capsys):
    database = bench_database("_cpu")
    bench_database("_cpu_base")  # the base side's own database, dropped after the test too
    assert api_cpu.main(["--base", str(ROOT), "--rounds", "1", "--requests", "5", "--database", database,
                         "--out-dir", str(tmp_path)]) == 0  # fmt: skip
    result = json.loads((tmp_path / "api-cpu.json").read_text())
    assert result["requests_per_round"] == 5 and len(result["runs"]) == len(result["base_runs"]) == 1
    assert result["runs"][0]["cpu_ms_per_create"] > 0 and result["base_runs"][0]["cpu_ms_per_create"] > 0
    assert result["median_cpu_ms_per_create"] == result["runs"][0]["cpu_ms_per_create"]
    assert result["runs"][0]["cpu_ms_per_read"] > 0 and result["base_runs"][0]["cpu_ms_per_read"] > 0
    assert result["median_cpu_ms_per_read"] == result["runs"][0]["cpu_ms_per_read"]
    assert result["runs"][0]["cpu_ms_per_edit"] > 0 and result["base_runs"][0]["cpu_ms_per_edit"] > 0
    out = capsys.readouterr().out
    assert all(f"median CPU per {what}" in out for what in ("create", "read", "edit"))


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--base", str(ROOT), "--rounds", "0"], "--rounds must be positive"),
        (["--base", str(ROOT), "--requests", "9001"], "--requests within 1..9000"),
        (["--base", str(ROOT), "--database", "x;drop"], "--database: bad name"),
        (["--base", "/nonexistent"], "is not a jobsched checkout"),
        ([], "the following arguments are required: --base"),
    ],
)
def test_bad_options_are_refused_by_name(argv, complaint, capsys):
    with pytest.raises(SystemExit):
        api_cpu.parse_args(argv)
    assert complaint in capsys.readouterr().err
