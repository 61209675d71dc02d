"""`jobsched crontab apply|export` live: plan, apply, no-op re-apply, edits, prune, conflicts, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobsched_client import Client
from jobsched_client.cli import exit_codes
from jobsched_client.crontab.parsing import parse_crontab
from jobsched_client.crontab.sync import apply_plan, plan_sync
from jobsched_client.errors import PreconditionFailed
from tests.cli import jobsched
from tests.server import Receiver

SAMPLES = Path(__file__).parent / "crontabs"


def crontab_file(tmp_path: Path, sample: str, receiver: Receiver, name: str = "ops.cron") -> Path:
    path = tmp_path / name
    path.write_text((SAMPLES / sample).read_text().replace("http://127.0.0.1:RECEIVER", receiver.url))
    return path


def apply(path: Path, env: dict[str, str], *extra: str):
    return jobsched("crontab", "apply", str(path), *extra, env=env)


def test_apply_creates_the_tasks_and_reapplying_changes_nothing(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    path = crontab_file(tmp_path, "ops.cron", receiver)
    planned = apply(path, cli_env)  # not a terminal and no --yes: the plan only
    assert planned.returncode == 0, planned.stderr
    assert "crontab 'ops': 5 to create, 0 to edit, 0 to delete, 0 unchanged" in planned.stdout
    assert f"+ create line 6: POST {receiver.url}/cache/warm" in planned.stdout
    assert "Not applied: run with --yes" in planned.stdout
    assert list(api.tasks.list()) == []

    applied = apply(path, cli_env, "--yes")
    assert applied.returncode == 0, applied.stderr
    tasks = {task.name: task for task in api.tasks.list()}
    assert sorted(tasks) == sorted(
        f"crontab:ops:{key}"
        for key in (
            f"POST {receiver.url}/cache/warm",
            f"POST {receiver.url}/reports?team=ops",
            f"GET {receiver.url}/health/deep",
            "nightly-vacuum",
            f"DELETE {receiver.url}/tmp?older=30d%20ago",
        )
    )
    report = tasks[f"crontab:ops:POST {receiver.url}/reports?team=ops"]
    assert (report.schedule.cron, report.schedule.timezone) == ("15 9 * * MON-FRI", "Europe/Madrid")
    assert (report.timeout_seconds, report.max_attempts, report.http.body) == (120, 3, "kind=daily&format=pdf")
    assert report.http.headers == {"Content-Type": "application/x-www-form-urlencoded"}
    assert tasks["crontab:ops:nightly-vacuum"].schedule.cron == "@daily"

    again = apply(path, cli_env, "--yes")
    assert again.returncode == 0
    assert "0 to create, 0 to edit, 0 to delete, 5 unchanged" in again.stdout
    assert "Nothing to do." in again.stdout
    assert {task.id: task.version for task in api.tasks.list()} == {task.id: task.version for task in tasks.values()}


def test_an_edited_line_is_an_if_match_edit_and_prune_deletes_what_left(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    path = crontab_file(tmp_path, "ops.cron", receiver)
    assert apply(path, cli_env, "--yes").returncode == 0
    before = {task.name: task for task in api.tasks.list()}
    text = path.read_text().replace("15 9 * * mon-fri", "30 8 * * mon-fri")
    text = "\n".join(line for line in text.splitlines() if "/health/deep" not in line) + "\n"
    path.write_text(text)

    kept = apply(path, cli_env, "--yes")
    assert "0 to create, 1 to edit, 0 to delete, 3 unchanged" in kept.stdout
    assert "1 task(s) of this crontab are no longer in the file; --prune deletes them" in kept.stdout
    assert len(list(api.tasks.list())) == 5

    pruned = apply(path, cli_env, "--yes", "--prune")
    assert "0 to create, 0 to edit, 1 to delete, 4 unchanged" in pruned.stdout
    after = {task.name: task for task in api.tasks.list()}
    assert f"crontab:ops:GET {receiver.url}/health/deep" not in after
    report = f"crontab:ops:POST {receiver.url}/reports?team=ops"
    assert after[report].id == before[report].id  # edited in place, not replaced
    assert after[report].schedule.cron == "30 8 * * MON-FRI"
    assert after[report].version == before[report].version + 1


def test_tasks_outside_the_file_and_other_crontabs_are_left_alone(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    own = api.tasks.create({"name": "hand made", "schedule": {"cron": "@daily"}, "http": {"url": receiver.url}})
    assert apply(crontab_file(tmp_path, "minimal.cron", receiver, "other.cron"), cli_env, "--yes").returncode == 0
    assert apply(crontab_file(tmp_path, "ops.cron", receiver), cli_env, "--yes", "--prune").returncode == 0
    names = {task.name for task in api.tasks.list()}
    assert {own.name, f"crontab:other:GET {receiver.url}/weekly"} <= names
    assert len(names) == 7


def test_an_edit_made_after_the_plan_is_a_conflict_not_overwritten(
    api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    text = crontab_file(tmp_path, "minimal.cron", receiver).read_text()
    apply_plan(api, plan_sync(api, parse_crontab(text), label="minimal", prune=False))
    plan = plan_sync(api, parse_crontab(text.replace("@weekly", "@monthly")), label="minimal", prune=False)
    (task,) = api.tasks.list()
    api.tasks.update(task, {"priority": 1})  # someone else's edit between plan and apply
    with pytest.raises(PreconditionFailed):
        apply_plan(api, plan)
    assert api.tasks.get(task.id).schedule.cron == "@weekly"


def test_a_task_deleted_elsewhere_is_created_again(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    path = crontab_file(tmp_path, "minimal.cron", receiver)
    assert apply(path, cli_env, "--yes").returncode == 0
    (task,) = api.tasks.list()
    api.tasks.delete(task)
    path.write_text(path.read_text().replace("@weekly", "@monthly"))
    gone = apply(path, cli_env, "--yes")  # the task was deleted elsewhere: the plan recreates it
    assert gone.returncode == 0 and "1 to create" in gone.stdout


def test_bad_lines_exit_5_naming_each_line_and_nothing_is_created(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    done = apply(crontab_file(tmp_path, "bad.cron", receiver), cli_env, "--yes")
    assert done.returncode == exit_codes.INVALID
    assert [":".join(line.split(":")[:2]) for line in done.stderr.splitlines()] == [
        f"error: line {n}" for n in range(3, 11)
    ]
    assert list(api.tasks.list()) == []


def test_a_schedule_the_server_refuses_names_its_line(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    path = tmp_path / "tz.cron"
    path.write_text(f"@hourly GET {receiver.url}/a\nCRON_TZ=Mars/Olympus\n0 30 31 2 * GET {receiver.url}/b\n")
    done = apply(path, cli_env, "--yes")
    assert done.returncode == exit_codes.INVALID
    assert done.stderr.startswith("error: line 3: the server refuses the schedule")
    assert list(api.tasks.list()) == []


def test_export_writes_a_crontab_that_applies_as_a_no_op(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    assert apply(crontab_file(tmp_path, "ops.cron", receiver), cli_env, "--yes").returncode == 0
    api.secrets.put("api-token", "Bearer x")
    vacuum = next(t for t in api.tasks.list() if t.name.endswith("nightly-vacuum"))
    api.tasks.update(vacuum, {"secret_ref": "api-token", "http": {"body": "100% full"}})
    exported = jobsched("crontab", "export", "--name", "ops", env=cli_env)
    assert exported.returncode == 0, exported.stderr
    assert "# jobsched: key=nightly-vacuum" in exported.stdout
    assert "JOBSCHED_SECRET_REF=api-token" in exported.stdout
    assert "100\\% full" in exported.stdout
    path = tmp_path / "exported.cron"
    path.write_text(exported.stdout)
    again = jobsched("crontab", "apply", "--name", "ops", str(path), "--prune", "--yes", env=cli_env)
    assert again.returncode == 0, again.stderr
    assert "0 to create, 0 to edit, 0 to delete, 5 unchanged" in again.stdout, again.stdout
    listed = json.loads(jobsched("-o", "json", "tasks", "list", env=cli_env).stdout)
    assert len(listed) == 5


def test_tasks_carry_the_crontab_label_and_unlabelled_ones_of_the_name_are_adopted(
    cli_env: dict[str, str], api: Client, receiver: Receiver, tmp_path: Path
) -> None:
    assert api.capabilities().task_label_filter
    path = crontab_file(tmp_path, "minimal.cron", receiver, "minimal.cron")
    key = f"GET {receiver.url}/weekly"
    # Made before the server had labels: the name only. Another crontab's task with this file's name prefix.
    legacy = api.tasks.create(
        {"name": f"crontab:minimal:{key}", "schedule": {"cron": "@weekly"},
         "http": {"url": f"{receiver.url}/weekly", "method": "GET"}}
    )  # fmt: skip
    foreign = api.tasks.create(
        {"name": "crontab:minimal:stray", "schedule": {"cron": "@daily"}, "http": {"url": receiver.url},
         "labels": {"crontab": "other"}}
    )  # fmt: skip
    adopted = apply(path, cli_env, "--yes", "--prune")
    assert adopted.returncode == 0, adopted.stderr
    assert "0 to create, 1 to edit, 0 to delete, 0 unchanged" in adopted.stdout  # the label added, not a new task
    assert f"~ edit    line 1: {key}  (labels)" in adopted.stdout
    assert api.tasks.get(legacy.id).labels == {"crontab": "minimal"}
    assert api.tasks.get(foreign.id).labels == {"crontab": "other"}  # the label says whose it is: not pruned

    # A labelled task renamed away from the prefix is still the file's: pruned as no longer in it.
    api.tasks.update(api.tasks.get(legacy.id), {"name": "renamed by hand"})
    again = apply(path, cli_env, "--yes", "--prune")
    assert "1 to create, 0 to edit, 1 to delete, 0 unchanged" in again.stdout, again.stdout
    names = {task.name: task for task in api.tasks.list(label={"crontab": "minimal"})}
    assert sorted(names) == [f"crontab:minimal:{key}"]
