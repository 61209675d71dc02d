"""Development mode without traps: the .env `make run` writes, one error naming every missing key,
and the hint a refused local URL gives in DEBUG.

`make run` itself (its receiver, its port, its stop) is tested in tests/test_make_run.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

from database.reachability import database_url_for

ROOT = Path(__file__).resolve().parent.parent
# What a plain shell lacks: none of the settings make run and the test settings provide.
_DROPPED = {
    "DJANGO_SETTINGS_MODULE",
    "DEBUG",
    "SECRET_KEY",
    "JWT_VERIFYING_KEY",
    "SECRETS_ENCRYPTION_KEYS",
    "DATABASE_URL",
    "EGRESS_ALLOWLIST",
    "SECURE_SSL_REDIRECT",
    "THROTTLE_CACHE_URL",
}


def _plain_shell(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in _DROPPED}, **extra}


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def _write_env(path: Path, **environ: str) -> None:
    result = _run(
        "scripts/dev_env.py",
        "--file",
        str(path),
        "--api-port",
        "8123",
        "--receiver-port",
        "9123",
        env=_plain_shell(**environ),
    )
    assert result.returncode == 0, result.stderr


def test_every_manage_command_works_in_a_plain_shell_after_make_run(tmp_path):
    env_file = tmp_path / ".env"
    _write_env(env_file, DATABASE_URL=database_url_for())
    code = "from django.conf import settings as s; print(s.DEBUG, s.DATABASES['default']['NAME'], s.JWT_VERIFYING_KEY)"
    result = _run("manage.py", "shell", "-v", "0", "-c", code, env=_plain_shell(JOBSCHED_ENV_FILE=str(env_file)))
    assert result.returncode == 0, result.stderr
    # DEBUG on, the database make run used (not whatever answers on 3306), the file's own key.
    key = re.search(r"^JWT_VERIFYING_KEY='(.+)'$", env_file.read_text(), flags=re.M).group(1)
    assert result.stdout.split() == ["True", database_url_for().rsplit("/", 1)[1], key]


def test_the_env_file_keeps_its_keys_and_the_lines_added_to_it(tmp_path):
    env_file = tmp_path / ".env"
    _write_env(env_file)
    first = env_file.read_text()
    env_file.write_text(first + "LOG_LEVEL='DEBUG'\n")
    _write_env(env_file, DATABASE_URL="mysql://root@127.0.0.1:3306/other")
    second = env_file.read_text()
    keys = ("SECRET_KEY=", "JWT_VERIFYING_KEY=", "SECRETS_ENCRYPTION_KEYS=")
    assert [line for line in first.splitlines() if line.startswith(keys)] == [
        line for line in second.splitlines() if line.startswith(keys)
    ]
    assert "LOG_LEVEL='DEBUG'" in second
    assert "DATABASE_URL='mysql://root@127.0.0.1:3306/other'" in second
    assert oct(env_file.stat().st_mode & 0o777) == "0o600"


def test_the_env_file_is_valid_shell_for_the_quickstart(tmp_path):
    env_file = tmp_path / ".env"
    _write_env(env_file)
    result = subprocess.run(
        ["bash", "-c", f'. "{env_file}" && echo "$JOBSCHED_API_URL $JOBSCHED_RECEIVER_URL"'],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert result.stdout.split() == ["http://127.0.0.1:8123", "http://127.0.0.1:9123"]


def test_an_explicit_settings_module_never_reads_the_env_file(tmp_path):
    # The tests' and the benchmarks' child commands name their settings: a developer's .env must not leak in.
    env_file = tmp_path / ".env"
    env_file.write_text("DEBUG='1'\n")
    env = _plain_shell(JOBSCHED_ENV_FILE=str(env_file), DJANGO_SETTINGS_MODULE="jobsched_project.settings")
    result = _run("manage.py", "check", env=env)
    assert result.returncode != 0
    assert "required when DEBUG is off" in result.stderr


def test_without_debug_one_error_names_every_missing_key_and_development_mode(tmp_path):
    env = _plain_shell(JOBSCHED_ENV_FILE=str(tmp_path / "absent.env"))
    result = _run("manage.py", "check", env=env)
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    for name in ("SECRET_KEY", "JWT_VERIFYING_KEY", "SECRETS_ENCRYPTION_KEYS", "DEBUG=1", "make run"):
        assert name in message, message


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://127.0.0.1:9911/hook", "http://127.0.0.1/hook", "http://10.0.0.7:8080/x"])
def test_in_debug_a_refused_local_url_says_how_to_allow_a_receiver(owner, url):
    body = {"name": "local", "schedule": {"cron": "* * * * *"}, "http": {"url": url}}
    with override_settings(DEBUG=True, EGRESS_ALLOWLIST="127.0.0.1:9123"):
        response = owner.post("/v1/tasks", body, format="json")
    assert response.status_code == 400
    reason = response.json()["errors"]["http.url"][0]
    assert "EGRESS_ALLOWLIST" in reason and "127.0.0.1:9123" in reason, reason


@pytest.mark.django_db
def test_without_debug_a_refused_url_says_only_the_generic_message(owner):
    body = {"name": "local", "schedule": {"cron": "* * * * *"}, "http": {"url": "http://127.0.0.1/hook"}}
    with override_settings(DEBUG=False, EGRESS_ALLOWLIST=""):
        response = owner.post("/v1/tasks", body, format="json")
    assert response.json()["errors"]["http.url"] == ["destination not allowed"]


IMPORT_FAILS = """
import runpy
import sys
sys.modules["django.core.management"] = None  # importing it now fails, as a broken install would
sys.argv = ["manage.py", "check"]
runpy.run_path("manage.py", run_name="__main__")
"""


def test_a_failed_import_reports_its_own_error_not_one_of_manage_py():
    done = _run("-c", IMPORT_FAILS, env=_plain_shell(DJANGO_SETTINGS_MODULE="tests.settings"))
    assert done.returncode != 0
    assert "ModuleNotFoundError: import of django.core.management halted" in done.stderr, done.stderr
    assert "UnboundLocalError" not in done.stderr, done.stderr
