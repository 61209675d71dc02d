"""The `jobsched` command against the live server: outputs, exit codes, profiles, secrets from stdin."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime, timedelta
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
        "window_seconds": None, "starts_at": None, "ends_at": None, "max_runs": None, "exclude_calendars": None,
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


def test_rate_limits_set_list_replace_delete(cli_env: dict[str, str]) -> None:
    created = jobsched(
        "-o", "json", "rate-limits", "set", "HTTPS://Hooks.Example.com", "--per-second", "2.5", "--burst", "5",
        env=cli_env,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    limit = json.loads(created.stdout)
    assert (limit["origin"], limit["per_second"], limit["burst"]) == ("https://hooks.example.com:443", 2.5, 5)
    replaced = jobsched(
        "-o", "json", "rate-limits", "set", "https://hooks.example.com:443", "--per-second", "1", "--burst", "1",
        env=cli_env,
    )  # fmt: skip
    assert json.loads(replaced.stdout)["id"] == limit["id"]
    table = jobsched("rate-limits", "list", env=cli_env)
    header, row = table.stdout.splitlines()
    assert header.split()[:2] == ["ID", "ORIGIN"] and row.split() == [limit["id"], limit["origin"], "1", "1"]
    bad = jobsched("rate-limits", "set", "ftp://x.example", "--per-second", "1", "--burst", "1", env=cli_env)
    assert bad.returncode == exit_codes.INVALID and "origin" in bad.stderr
    assert jobsched("rate-limits", "delete", limit["id"], env=cli_env).returncode == 0
    assert json.loads(jobsched("-o", "json", "rate-limits", "list", env=cli_env).stdout) == []
    missing = jobsched("rate-limits", "get", limit["id"], env=cli_env)
    assert missing.returncode == exit_codes.NOT_FOUND


def test_notifications_set_get_deliveries_delete(cli_env: dict[str, str]) -> None:
    done = jobsched(
        "-o", "json", "notifications", "set", "--url", "http://127.0.0.1:9/notify", "--event", "job.dead",
        "--event", "task.failing", "--failing-after", "2", env=cli_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"] == ["job.dead", "task.failing"]
    read = json.loads(jobsched("-o", "json", "notifications", "get", env=cli_env).stdout)
    assert (read["url"], read["failing_after"], read["enabled"]) == ("http://127.0.0.1:9/notify", 2, True)
    table = jobsched("notifications", "deliveries", env=cli_env)
    assert table.returncode == 0 and table.stdout.strip() == "(none)"
    assert jobsched("notifications", "delete", env=cli_env).returncode == 0
    gone = jobsched("notifications", "get", env=cli_env)
    assert gone.returncode == exit_codes.NOT_FOUND
    refused = jobsched("notifications", "set", "--url", "ftp://x", "--event", "job.dead", env=cli_env)
    assert refused.returncode == exit_codes.INVALID and "url" in refused.stderr


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


def test_tasks_changes_lists_the_audit_trail_newest_first(cli_env: dict[str, str]) -> None:
    task = create(cli_env)
    jobsched("tasks", "edit", task["id"], "--priority", "1", env=cli_env)
    jobsched("tasks", "pause", task["id"], env=cli_env)
    jobsched("tasks", "delete", task["id"], env=cli_env)

    as_json = jobsched("-o", "json", "tasks", "changes", task["id"], env=cli_env)
    table = jobsched("tasks", "changes", task["id"], "--limit", "2", env=cli_env)

    assert as_json.returncode == 0, as_json.stderr
    changes = json.loads(as_json.stdout)
    assert [change["action"] for change in changes] == ["delete", "pause", "update", "create"]
    assert {"field": "priority", "old": 5, "new": 1, "masked": False, "truncated": False} in changes[2]["changes"]
    header, *rows = table.stdout.splitlines()
    assert header.split()[:3] == ["AT", "ACTION", "ACTOR"]
    assert [row.split()[1] for row in rows] == ["delete", "pause"]
    assert "status" in rows[0]
    missing = jobsched("tasks", "changes", "0193a1e0-1111-7222-8333-944455566677", env=cli_env)
    assert missing.returncode == exit_codes.NOT_FOUND


def test_calendars_put_get_list_delete_and_a_task_excluding_one(cli_env: dict[str, str]) -> None:
    put = jobsched(
        "-o", "json", "calendars", "put", "hols", "--timezone", "Europe/Madrid", "--date", "2027-12-25",
        "--range", "2027-08-09..2027-08-13", env=cli_env,
    )  # fmt: skip
    assert put.returncode == 0, put.stderr
    assert json.loads(put.stdout)["ranges"] == [{"from": "2027-08-09", "to": "2027-08-13"}]
    got = json.loads(jobsched("-o", "json", "calendars", "get", "hols", env=cli_env).stdout)
    assert (got["timezone"], got["dates"], got["version"]) == ("Europe/Madrid", ["2027-12-25"], 1)
    table = jobsched("calendars", "list", env=cli_env).stdout.splitlines()
    assert table[0].split()[:2] == ["NAME", "TIMEZONE"] and table[1].startswith("hols")
    bad = jobsched("calendars", "put", "hols", "--date", "2027-02-30", env=cli_env)
    assert bad.returncode == exit_codes.INVALID and "dates[0]" in bad.stderr
    stale = jobsched("calendars", "put", "hols", "--date", "2027-12-26", "--if-match", '"9"', env=cli_env)
    assert stale.returncode == exit_codes.CONFLICT
    done = jobsched(
        "-o", "json", "tasks", "create", "--name", "skips holidays", "--cron", "0 9 * * *", "--timezone",
        "Europe/Madrid", "--exclude-calendar", "hols", "--url", "http://127.0.0.1:9/hook", env=cli_env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    task = json.loads(done.stdout)
    assert task["schedule"]["exclude_calendars"] == ["hols"]
    in_use = jobsched("calendars", "delete", "hols", env=cli_env)
    assert in_use.returncode == exit_codes.CONFLICT and "calendar-in-use" in in_use.stderr
    assert jobsched("tasks", "delete", task["id"], env=cli_env).returncode == 0
    assert jobsched("calendars", "delete", "hols", env=cli_env).returncode == 0
    assert jobsched("calendars", "get", "hols", env=cli_env).returncode == exit_codes.NOT_FOUND


def test_tasks_backfill_prints_its_counts_and_a_second_call_creates_nothing(cli_env: dict[str, str]) -> None:
    task = create(cli_env, "backfilled")
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    window = (
        "--from",
        (end - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S%z"),
        "--to",
        end.strftime("%Y-%m-%dT%H:%M"),
    )
    first = jobsched("-o", "json", "tasks", "backfill", task["id"], *window, env=cli_env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"created": 8, "existing": 0, "excluded": 0}
    again = jobsched("-o", "json", "tasks", "backfill", task["id"], *window, env=cli_env)
    assert json.loads(again.stdout) == {"created": 0, "existing": 8, "excluded": 0}
    backwards = jobsched(
        "tasks", "backfill", task["id"], "--from", "2026-01-02T00:00", "--to", "2026-01-01T00:00", env=cli_env
    )
    assert backwards.returncode == exit_codes.INVALID and "to:" in backwards.stderr
