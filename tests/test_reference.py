"""The reference pages are generated from the code, and the code documents everything it reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

from jobsched_project import reference, setting_docs

ROOT = Path(__file__).resolve().parent.parent

# Runs settings.py with os.environ replaced by a mapping that notes each name read from settings.py
# itself (libraries imported on the way read their own variables: not ours to document).
_RECORD_READS = r"""
import json, os, sys
import environ

SETTINGS_FILE = os.path.join("jobsched_project", "settings.py")
seen = set()

class Recording(dict):
    def _note(self, key):
        frame = sys._getframe(2)
        while frame and ("environ" in frame.f_code.co_filename.split(os.sep)[-2:-1]
                         or frame.f_code.co_filename.endswith(("os.py", "<string>"))):
            frame = frame.f_back
        if frame and frame.f_code.co_filename.endswith(SETTINGS_FILE):
            seen.add(key)
    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)
    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)
    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)

recording = Recording(os.environ)
os.environ = recording
environ.Env.ENVIRON = recording
import jobsched_project.settings
print(json.dumps(sorted(seen)))
"""


def _reads_of_settings_py(**env: str) -> set[str]:
    base = {k: v for k, v in os.environ.items() if k not in setting_docs.SETTINGS}
    result = subprocess.run(
        [sys.executable, "-c", _RECORD_READS],
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout))


@pytest.mark.parametrize(
    "env",
    [
        {"DEBUG": "1"},
        # The branches DEBUG and the Cassandra store open read their own variables too.
        {"DEBUG": "1", "HISTORY_BACKEND": "cassandra", "CASSANDRA_HOSTS": "127.0.0.1", "JWT_ALGORITHM": "HS256"},
    ],
)
def test_every_variable_settings_py_reads_is_documented(env):
    read = _reads_of_settings_py(**env)
    assert len(read) > 40
    assert read - set(setting_docs.SETTINGS) == set()


def test_every_documented_setting_is_read_and_recorded_with_its_default():
    read = _reads_of_settings_py(DEBUG="1")
    assert set(setting_docs.SETTINGS) - read == set()
    # The helpers record what they read: the table's defaults are the code's.
    assert set(setting_docs.DEFAULTS) == set(setting_docs.SETTINGS)


@pytest.mark.parametrize("name", sorted(setting_docs.TOOL_SETTINGS))
def test_every_tool_variable_is_read_where_its_row_says(name):
    source = (ROOT / setting_docs.TOOL_SETTINGS[name].read_by).read_text()
    assert re.search(rf"\b{name}\b", source)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    result = subprocess.run(
        [sys.executable, "-m", "jobsched_project.reference", str(out)],
        cwd=ROOT,
        env={**os.environ, "DB_CONN_MAX_AGE": "7", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return out


def test_the_settings_page_lists_every_setting_with_the_codes_default(generated):
    page = (generated / "settings.md").read_text()
    for name in [*setting_docs.SETTINGS, *setting_docs.TOOL_SETTINGS]:
        assert f"| `{name}` |" in page
    # The code's default, not the value in the shell that built the page.
    assert "| `DB_CONN_MAX_AGE` | `60` |" in page
    assert "| `HISTORY_TTL_SECONDS` | `2592000` (30 days) |" in page
    assert "| `DATABASE_URL` | `mysql://root@127.0.0.1:3306/jobsched` |" in page


def test_the_commands_page_lists_every_command_and_option_from_its_parser(generated):
    page = (generated / "commands.md").read_text()
    commands = {name: app for name, app in get_commands().items() if app in reference.PROJECT_APPS}
    assert {"run_executor", "run_scheduler", "run_dev", "issue_token", "rotate_secret_keys"} <= set(commands)
    for name, app in commands.items():
        assert f"## `{name}`" in page
        parser = load_command_class(app, name).create_parser("manage.py", name)
        for action in parser._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag not in reference._COMMON_OPTIONS:
                    assert f"`{flag}`" in page, (name, flag)


def test_the_schema_written_for_the_docs_is_the_one_the_api_serves(generated, client):
    written = json.loads((generated / "openapi.json").read_text())
    served = client.get("/v1/schema?format=json").json()
    assert written["paths"].keys() == served["paths"].keys()
    assert written["tags"] == served["tags"]
