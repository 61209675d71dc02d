"""The `jobsched` command against the live server: outputs, exit codes, profiles, secrets from stdin."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml

from jobsched_client.cli import exit_codes
from tests.cli import jobsched
from tests.server import REPO, SERVER_PYTHON


def create(env: dict[str, str], name: str = "cli task") -> dict:
    done = jobsched(
        "-o", "json", "tasks", "create", "--name", name, "--cron", "*/15 * * * *", "--timezone", "Europe/Madrid",
        "--url", "http://127.0.0.1:9/hook", "-H", "Content-Type: text/plain", "--body", "hi", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_tasks_create_get_list_in_every_output(cli_env: dict[str, str]) -> None:
    task = create(cli_env)
    assert task["schedule"] == {
        "cron": "*/15 * * * *", "timezone": "Europe/Madrid", "run_at": None, "every": None, "anchor": None,
        "window_seconds": None, "starts_at": None, "ends_at": None, "max_runs": None,
    }  # fmt: skip
    assert task["http"]["headers"] == {"Content-Type": "text/plain"}
    as_yaml = jobsched("-o", "yaml", "tasks", "get", task["id"], env=cli_env)
    assert yaml.safe_load(as_yaml.stdout)["id"] == task["id"]
    table = jobsched("tasks", "list", env=cli_env)
    assert table.returncode == 0
    header, row = table.stdout.splitlines()
    assert header.split()[:3] == ["ID", "NAME", "STATUS"]
    assert row.startswith(task["id"]) and "*/15 * * * * (Europe/Madrid)" in row


def test_edit_pause_resume_preview_run_delete(cli_env: dict[str, str]) -> None:
    task = create(cli_env)
    edited = jobsched("-o", "json", "tasks", "edit", task["id"], "--priority", "1", env=cli_env)
    assert json.loads(edited.stdout)["priority"] == 1
    stale = jobsched("tasks", "edit", task["id"], "--priority", "2", "--if-match", '"1"', env=cli_env)
    assert stale.returncode == exit_codes.CONFLICT
    assert "412 precondition-failed" in stale.stderr
    assert json.loads(jobsched("-o", "json", "tasks", "pause", task["id"], env=cli_env).stdout)["status"] == "paused"
    paused_run = jobsched("tasks", "run", task["id"], env=cli_env)
    assert paused_run.returncode == exit_codes.CONFLICT and "task-paused" in paused_run.stderr
    assert json.loads(jobsched("-o", "json", "tasks", "resume", task["id"], env=cli_env).stdout)["status"] == "active"
    preview = jobsched("tasks", "preview", task["id"], "-n", "3", env=cli_env)
    assert len(preview.stdout.splitlines()) == 4
    job = json.loads(jobsched("-o", "json", "tasks", "run", task["id"], env=cli_env).stdout)
    assert json.loads(jobsched("-o", "json", "jobs", "get", job["id"], env=cli_env).stdout)["task_id"] == task["id"]
    history = json.loads(jobsched("-o", "json", "history", task["id"], env=cli_env).stdout)
    assert [j["id"] for j in history] == [job["id"]]
    cancel = jobsched("jobs", "retry", job["id"], env=cli_env)
    assert cancel.returncode == exit_codes.CONFLICT
    assert json.loads(jobsched("-o", "json", "dlq", env=cli_env).stdout) == []
    assert jobsched("tasks", "delete", task["id"], env=cli_env).returncode == 0
    missing = jobsched("tasks", "get", task["id"], env=cli_env)
    assert missing.returncode == exit_codes.NOT_FOUND and "404 not-found" in missing.stderr


def test_create_an_interval_task_with_a_window_and_an_overlap_policy(cli_env: dict[str, str]) -> None:
    done = jobsched(
        "-o", "json", "tasks", "create", "--name", "every", "--every", "90m", "--window", "120",
        "--overlap", "skip", "--url", "http://127.0.0.1:9/hook", env=cli_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    task = json.loads(done.stdout)
    assert (task["schedule"]["every"], task["schedule"]["window_seconds"], task["overlap"]) == ("1h30m", 120, "skip")
    table = jobsched("tasks", "list", env=cli_env)
    assert "every 1h30m" in table.stdout
    lonely = jobsched("tasks", "edit", task["id"], "--window", "60", env=cli_env)
    assert lonely.returncode != 0 and "--window goes with" in lonely.stderr


def test_a_refused_field_exits_5_naming_it(cli_env: dict[str, str]) -> None:
    done = jobsched(
        "tasks", "create", "--name", "x", "--cron", "61 * * * *", "--url", "http://127.0.0.1:9/", env=cli_env
    )
    assert done.returncode == exit_codes.INVALID
    assert "schedule.cron" in done.stderr


def test_create_from_a_yaml_file(cli_env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(
        "name: from file\nschedule: {run_at: '2031-01-01T09:00:00Z'}\nhttp: {url: 'http://127.0.0.1:9/', method: PUT}\n"
    )
    task = json.loads(jobsched("-o", "json", "tasks", "create", "-f", str(path), env=cli_env).stdout)
    assert (task["name"], task["http"]["method"], task["schedule"]["run_at"]) == (
        "from file",
        "PUT",
        "2031-01-01T09:00:00Z",
    )


def test_secret_values_come_from_stdin_or_a_file_and_are_never_printed(cli_env: dict[str, str], tmp_path: Path) -> None:
    done = jobsched("secrets", "put", "api-token", stdin="Bearer from-stdin\n", env=cli_env)
    assert done.returncode == 0, done.stderr
    assert "from-stdin" not in done.stdout + done.stderr
    value_file = tmp_path / "value"
    value_file.write_text("Bearer from-file\n")
    replaced = jobsched("-o", "json", "secrets", "put", "api-token", "--from-file", str(value_file), env=cli_env)
    assert json.loads(replaced.stdout)["version"] == 2
    listed = jobsched("secrets", "list", env=cli_env)
    assert "api-token" in listed.stdout and "Bearer" not in listed.stdout
    assert jobsched("secrets", "delete", "api-token", env=cli_env).returncode == 0
    bad = jobsched("secrets", "put", "api-token", stdin="two\nlines\n", env=cli_env)
    assert bad.returncode == exit_codes.INVALID and "value" in bad.stderr


def test_signing_secrets(cli_env: dict[str, str]) -> None:
    created = json.loads(jobsched("-o", "json", "signing-secrets", "create", env=cli_env).stdout)
    assert created["secret"].startswith("whsec_")
    listed = json.loads(jobsched("-o", "json", "signing-secrets", "list", env=cli_env).stdout)
    assert [s["id"] for s in listed] == [created["id"]]
    assert jobsched("signing-secrets", "delete", created["id"], env=cli_env).returncode == 0


def test_profiles_with_a_token_command_and_env_overrides(
    cli_env: dict[str, str], server_env: dict[str, str], base_url: str
) -> None:
    # The server's settings too: the token command is the project's own `manage.py issue_token`.
    env = {**server_env, **{k: v for k, v in cli_env.items() if k not in ("JOBSCHED_URL", "JOBSCHED_TOKEN")}}
    unconfigured = jobsched("tasks", "list", env=env)
    assert unconfigured.returncode == exit_codes.NOT_CONFIGURED
    token_command = shlex.join(
        [SERVER_PYTHON, str(REPO / "manage.py"), "issue_token", "--tenant", "cli-profile-tenant"]
    )
    assert (
        jobsched("config", "set", "local", "--url", base_url, "--token-command", token_command, env=env).returncode == 0
    )
    assert (
        jobsched("config", "set", "broken", "--url", base_url, "--token-env", "NO_SUCH_TOKEN_VAR", env=env).returncode
        == 0
    )
    shown = yaml.safe_load(jobsched("-o", "yaml", "config", "show", env=env).stdout)
    assert shown["default"] == "local" and shown["profiles"]["local"]["url"] == base_url
    listed = jobsched("tasks", "list", env=env)  # the token from manage.py issue_token
    assert listed.returncode == 0, listed.stderr
    assert jobsched("-p", "broken", "tasks", "list", env=env).returncode == exit_codes.NOT_CONFIGURED
    bad_token = jobsched("-p", "broken", "tasks", "list", env={**env, "JOBSCHED_TOKEN": "nope"})
    assert bad_token.returncode == exit_codes.AUTH
    unreachable = jobsched("tasks", "list", env={**env, "JOBSCHED_URL": "http://127.0.0.1:9"})
    assert unreachable.returncode == exit_codes.UNAVAILABLE


def test_usage_errors_exit_2_and_completion_scripts_print(cli_env: dict[str, str]) -> None:
    assert jobsched("tasks", "frobnicate", env=cli_env).returncode == exit_codes.USAGE
    script = jobsched("completion", "bash", env=cli_env)
    assert script.returncode == 0 and "_JOBSCHED_COMPLETE" in script.stdout


def test_labels_on_create_edit_and_list(cli_env: dict[str, str]) -> None:
    made = jobsched(
        "-o", "json", "tasks", "create", "--name", "labelled", "--cron", "@daily", "--url", "http://127.0.0.1:9/",
        "--label", "env=prod", "--label", "team=ops", env=cli_env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    task = json.loads(made.stdout)
    assert task["labels"] == {"env": "prod", "team": "ops"}
    other = create(cli_env, "other")
    edited = jobsched(
        "-o", "json", "tasks", "edit", task["id"], "--label", "tier=gold", "--unlabel", "team", env=cli_env
    )
    assert json.loads(edited.stdout)["labels"] == {"env": "prod", "tier": "gold"}
    selected = jobsched("-o", "json", "tasks", "list", "--label", "env=prod", "--label", "tier=gold", env=cli_env)
    assert [t["id"] for t in json.loads(selected.stdout)] == [task["id"]]
    table = jobsched("tasks", "list", env=cli_env).stdout.splitlines()
    assert table[0].split()[-1] == "LABELS"
    assert table[2].startswith(task["id"]) and table[2].endswith("env=prod,tier=gold")
    assert table[1].startswith(other["id"]) and table[1].endswith("-")
    bad = jobsched("tasks", "list", "--label", "env", env=cli_env)
    assert bad.returncode == 2 and "key=value" in bad.stderr


def test_export_then_import_a_changed_file_plans_then_applies_with_yes(cli_env: dict[str, str], tmp_path: Path) -> None:
    task = create(cli_env, "exported")
    path = tmp_path / "tasks.jsonl"
    exported = jobsched("tasks", "export", str(path), env=cli_env)
    assert exported.returncode == 0, exported.stderr
    (line,) = [json.loads(text) for text in path.read_text().splitlines()]
    assert (line["id"], line["name"], line["status"]) == (task["id"], "exported", "active")
    assert json.loads(jobsched("tasks", "export", env=cli_env).stdout) == line  # stdout by default

    line["priority"] = 1
    extra = {"name": "imported", "schedule": {"cron": "@hourly"}, "http": {"url": "http://127.0.0.1:9/"}}
    path.write_text(json.dumps(line) + "\n\n" + json.dumps(extra) + "\n")
    planned = jobsched("tasks", "import", str(path), env=cli_env)  # not a terminal, no --yes: the plan only
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.splitlines() == [
        "import: 1 to create, 1 to edit, 0 unchanged",
        "~ edit    exported  (priority)",
        "+ create  imported",
        "Not applied: run with --yes to apply.",
    ]
    dry = jobsched("tasks", "import", str(path), "--dry-run", "--yes", env=cli_env)
    assert dry.returncode == 0 and "Not applied (dry run)." in dry.stdout
    assert len(json.loads(jobsched("-o", "json", "tasks", "list", env=cli_env).stdout)) == 1

    applied = jobsched("tasks", "import", str(path), "--yes", env=cli_env)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines()[-1] == "Applied: 1 created, 1 edited, 0 unchanged."
    listed = {t["name"]: t for t in json.loads(jobsched("-o", "json", "tasks", "list", env=cli_env).stdout)}
    assert listed["exported"]["priority"] == 1 and listed["exported"]["id"] == task["id"]
    again = jobsched("tasks", "import", str(path), env=cli_env)
    assert again.stdout.splitlines()[-1] == "Nothing to do."


def test_a_refused_import_exits_5_naming_the_line(cli_env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"name": "x", "schedule": {"cron": "61 * * * *"}, "http": {"url": "http://127.0.0.1:9/"}}\n')
    done = jobsched("tasks", "import", str(path), "--yes", env=cli_env)
    assert done.returncode == exit_codes.INVALID
    assert "lines[1].schedule.cron" in done.stderr
    path.write_text("not json\n")
    garbled = jobsched("tasks", "import", str(path), "--yes", env=cli_env)
    assert garbled.returncode == exit_codes.INVALID and "line 1" in garbled.stderr
