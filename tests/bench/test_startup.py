"""`python -m bench.startup` at one round: every loop starts both ways and its figures are written."""

from __future__ import annotations

import json

import pytest

from bench.startup import LOOPS, MODES
from tests.bench.runs import run_bench

pytestmark = pytest.mark.django_db


def test_each_loop_is_timed_compiled_and_from_source(tmp_path):
    output = tmp_path / "startup.json"
    done = run_bench("-m", "bench.startup", "--rounds", "1", "--output", str(output), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(output.read_text())
    for mode in MODES:
        for loop in LOOPS:
            (wall, cpu) = result["samples"][mode][loop][0]
            assert 0 < cpu <= wall + 1, (mode, loop)  # the child's own CPU, until its start line
            assert result["median"][mode][loop]["seconds"] == round(wall, 3)
    assert all(f"{loop}:" in done.stdout for loop in LOOPS)


def test_rounds_must_be_positive(tmp_path):
    done = run_bench("-m", "bench.startup", "--rounds", "0", "--output", str(tmp_path / "x.json"), timeout=60)
    assert done.returncode == 2
    assert "--rounds" in done.stderr
