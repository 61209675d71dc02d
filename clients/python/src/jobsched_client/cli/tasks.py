"""`jobsched tasks ...`: list, get, create, edit (If-Match), pause, resume, delete, run, preview, dry-run,
changes (the audit trail), export and import (JSON lines)."""

from __future__ import annotations

import itertools
import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

import click
import yaml

from jobsched_client.cli import exit_codes
from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit, emit_list
from jobsched_client.models import ImportResult, PreviewRun, Task, TaskChange

# What --from/--to take: ISO 8601, with an offset or without (then UTC).
_TIMES = ["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M%z", "%Y-%m-%dT%H:%M", "%Y-%m-%d"]


def _read_document(stream: Any) -> dict[str, Any]:
    data = yaml.safe_load(stream.read())  # YAML is a superset of JSON: either works
    if not isinstance(data, dict):
        raise click.BadParameter("must hold a JSON or YAML object", param_hint="--file")
    return data


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise click.BadParameter(f"{text!r} is not `Name: value`", param_hint="--header")
    return name.strip(), value.strip()


def parse_labels(texts: tuple[str, ...], *, param_hint: str = "--label") -> dict[str, str]:
    """("env=prod", "team=ops") -> {"env": "prod", "team": "ops"}; the server checks the grammar."""
    labels: dict[str, str] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{text!r} is not key=value", param_hint=param_hint)
        labels[key] = value
    return labels


def task_fields(options: dict[str, Any]) -> dict[str, Any]:
    """The task JSON (or merge patch) the flags describe; only the flags given appear."""
    body: dict[str, Any] = {}
    if options["file"] is not None:
        body = _read_document(options["file"])
    simple = {
        "name": "name",
        "timeout": "timeout_seconds",
        "max_attempts": "max_attempts",
        "priority": "priority",
        "secret_ref": "secret_ref",
        "overlap": "overlap",
    }
    body.update({field: options[flag] for flag, field in simple.items() if options[flag] is not None})
    if options["cron"] is not None or options["run_at"] is not None or options["every"] is not None:
        schedule = {
            "cron": options["cron"],
            "every": options["every"],
            "timezone": options["timezone"],
            "run_at": options["run_at"],
            "window_seconds": options["window"],
            "exclude_calendars": list(options["exclude_calendars"]) or None,
        }
        body["schedule"] = {key: value for key, value in schedule.items() if value is not None}
    elif options["timezone"] is not None:
        raise click.BadParameter("--timezone goes with --cron", param_hint="--timezone")
    elif options["window"] is not None:
        # A schedule is replaced whole by an edit: the window travels with the schedule it spreads.
        raise click.BadParameter("--window goes with --cron, --every or --run-at", param_hint="--window")
    elif options["exclude_calendars"]:
        raise click.BadParameter(
            "--exclude-calendar goes with --cron, --every or --run-at", param_hint="--exclude-calendar"
        )
    http = dict(body.get("http") or {})
    if options["url"] is not None:
        http["url"] = options["url"]
    if options["method"] is not None:
        http["method"] = options["method"].upper()
    if options["header"]:
        http["headers"] = dict(_header(text) for text in options["header"])
    if options["body"] is not None:
        http["body"] = options["body"]
    if http:
        body["http"] = http
    labels: dict[str, str | None] = {**parse_labels(options["label"])}
    labels.update(dict.fromkeys(options.get("unlabel") or (), None))  # null removes a key (merge patch)
    if labels:
        body["labels"] = {**(body.get("labels") or {}), **labels}
    return body


def task_options(command: Any) -> Any:
    """The flags create and edit share."""
    decorators = [
        click.option("--file", "-f", type=click.File("r"), help="Task JSON/YAML (- for stdin); flags override it."),
        click.option("--name"),
        click.option("--cron", help='Five-field cron expression or a nickname, e.g. "0 9 * * 1-5" or @hourly.'),
        click.option("--timezone", help="IANA zone of --cron (default UTC)."),
        click.option("--run-at", help="One-shot instant with an offset, e.g. 2027-01-01T09:00:00Z."),
        click.option(
            "--exclude-calendar",
            "exclude_calendars",
            multiple=True,
            help="A calendar whose dates the runs skip (repeat it; see jobsched calendars).",
        ),
        click.option("--every", help='An interval instead of a cron, e.g. "90m", "2h", "1h30m" (at least 1m).'),
        click.option("--window", type=int, help="Seconds after each run's time its call may be spread over."),
        click.option(
            "--overlap",
            type=click.Choice(["allow", "skip", "buffer_one", "replace"]),
            help="A run while the previous one is unfinished (default allow).",
        ),
        click.option("--url", help="The URL to call."),
        click.option("--method", help="HTTP method (default POST)."),
        click.option("--header", "-H", multiple=True, help='"Name: value"; repeat for several (replaces all).'),
        click.option("--body", help="Request body text."),
        click.option("--timeout", type=int, help="Seconds to wait for the answer."),
        click.option("--max-attempts", type=int),
        click.option("--priority", type=int, help="0 (first) to 9."),
        click.option("--secret-ref", help="Name of a stored secret sent as Authorization."),
        click.option("--label", "-l", multiple=True, help="key=value; repeat for several (edit: others are kept)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@click.group()
def tasks() -> None:
    """Tasks: what to call, and when."""


@tasks.command("list")
@click.option("--limit", type=int, help="Show at most this many (default: all, page by page).")
@click.option("--label", "-l", multiple=True, help="Only tasks with this label, key=value; repeat: all must hold.")
@pass_cli
def list_tasks(cli: CliContext, limit: int | None, label: tuple[str, ...]) -> None:
    """The tenant's tasks, newest first."""
    found = cli.client().tasks.list(limit=min(limit, 100) if limit else None, label=parse_labels(label) or None)
    emit_list(itertools.islice(found, limit), cli.output, model=Task)


@tasks.command("get")
@click.argument("task_id")
@pass_cli
def get_task(cli: CliContext, task_id: str) -> None:
    """One task."""
    emit(cli.client().tasks.get(task_id), cli.output)


@tasks.command("create")
@task_options
@click.option("--idempotency-key", help="Reuse to make a retried create return the same task (default: generated).")
@pass_cli
def create_task(cli: CliContext, idempotency_key: str | None, **options: Any) -> None:
    """Create a task from flags and/or --file."""
    body = task_fields(options)
    emit(cli.client().tasks.create(body, idempotency_key=idempotency_key), cli.output)


@tasks.command("edit")
@click.argument("task_id")
@task_options
@click.option("--unlabel", multiple=True, metavar="KEY", help="Remove this label; repeat for several.")
@click.option("--if-match", help="The ETag you read (e.g. '\"7\"'); default: the one read just now.")
@pass_cli
def edit_task(cli: CliContext, task_id: str, if_match: str | None, **options: Any) -> None:
    """Change the given fields of a task (a merge patch sent with If-Match).

    Exit code 4 when the task changed since it was read.
    """
    patch = task_fields(options)
    if not patch:
        raise click.UsageError("nothing to change: give a flag or --file")
    api = cli.client()
    target = task_id if if_match else api.tasks.get(task_id)
    emit(api.tasks.update(target, patch, etag=if_match), cli.output)


@tasks.command("delete")
@click.argument("task_id")
@click.option("--if-match", help="Delete only if the task is still at this ETag.")
@pass_cli
def delete_task(cli: CliContext, task_id: str, if_match: str | None) -> None:
    """Delete a task."""
    cli.client().tasks.delete(task_id, etag=if_match)
    click.echo(f"deleted task {task_id}", err=True)


@tasks.command("pause")
@click.argument("task_id")
@pass_cli
def pause_task(cli: CliContext, task_id: str) -> None:
    """Pause a task: nothing of it runs until it is resumed."""
    emit(cli.client().tasks.pause(task_id), cli.output)


@tasks.command("resume")
@click.argument("task_id")
@pass_cli
def resume_task(cli: CliContext, task_id: str) -> None:
    """Resume a task at its next future run."""
    emit(cli.client().tasks.resume(task_id), cli.output)


@tasks.command("run")
@click.argument("task_id")
@click.option("--idempotency-key", help="Reuse to make a retried run return the same job.")
@pass_cli
def run_task(cli: CliContext, task_id: str, idempotency_key: str | None) -> None:
    """Run a task now (one extra job); prints the job."""
    emit(cli.client().tasks.run(task_id, idempotency_key=idempotency_key), cli.output)


@tasks.command("backfill")
@click.argument("task_id")
@click.option("--from", "start", required=True, type=click.DateTime(_TIMES), help="Start, included (UTC if no offset).")
@click.option("--to", "end", required=True, type=click.DateTime(_TIMES), help="End, excluded; not in the future.")
@pass_cli
def backfill_task(cli: CliContext, task_id: str, start: datetime, end: datetime) -> None:
    """Create the task's runs in [--from, --to) that were never made; prints created/existing/excluded."""
    emit(cli.client().tasks.backfill(task_id, start=_aware(start), end=_aware(end)), cli.output)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


@tasks.command("preview")
@click.argument("task_id")
@click.option("-n", "count", type=int, default=10, show_default=True, help="How many runs.")
@pass_cli
def preview_task(cli: CliContext, task_id: str, count: int) -> None:
    """The task's next fire times (UTC and local, DST changes marked)."""
    preview = cli.client().tasks.preview(task_id, n=count)
    if cli.output == "table":
        emit_list(preview.runs, cli.output, model=PreviewRun)
    else:
        emit(preview, cli.output)


@tasks.command("dry-run")
@click.argument("task_id")
@pass_cli
def dry_run_task(cli: CliContext, task_id: str) -> None:
    """The exact request a run would send now (credential masked); sends nothing."""
    emit(cli.client().tasks.dry_run(task_id), cli.output)


@tasks.command("changes")
@click.argument("task_id")
@click.option("--limit", type=int, help="Show at most this many (default: all, page by page).")
@pass_cli
def task_changes(cli: CliContext, task_id: str, limit: int | None) -> None:
    """The task's changes, newest first: who changed which fields, when (a deleted task's too)."""
    found = cli.client().tasks.changes(task_id, limit=min(limit, 100) if limit else None)
    emit_list(itertools.islice(found, limit), cli.output, model=TaskChange)


@tasks.command("export")
@click.argument("file", type=click.File("w", encoding="utf-8"), default="-")
@pass_cli
def export_tasks(cli: CliContext, file: TextIO) -> None:
    """Write every task to FILE (default stdout) as JSON lines: one task a line, `jobsched tasks import` takes it.

    Secrets are written by name (secret_ref), never their value.
    """
    count = 0
    for line in cli.client().tasks.export():
        file.write(json.dumps(line, ensure_ascii=False) + "\n")
        count += 1
    click.echo(f"exported {count} task(s)", err=True)


def read_json_lines(file: TextIO) -> list[dict[str, Any]]:
    """The file's tasks, blank lines skipped (so the server's `lines[N]` is the Nth task)."""
    tasks: list[dict[str, Any]] = []
    for number, text in enumerate(file, start=1):
        if not text.strip():
            continue
        try:
            task = json.loads(text)
        except ValueError as exc:
            raise ImportFileError(f"line {number}: not JSON ({exc})") from None
        if not isinstance(task, dict):
            raise ImportFileError(f"line {number}: a task is a JSON object")
        tasks.append(task)
    if not tasks:
        raise ImportFileError("the file holds no task")
    return tasks


class ImportFileError(click.ClickException):
    exit_code = exit_codes.INVALID


def render_import(result: ImportResult) -> list[str]:
    lines = [f"import: {result.created} to create, {result.updated} to edit, {result.unchanged} unchanged"]
    for item in result.lines:
        if item.action == "update":
            lines.append(f"~ edit    {item.name}  ({', '.join(item.fields)})")
        else:
            lines.append(f"{'+ create ' if item.action == 'create' else '  same   '} {item.name}")
    return lines


@tasks.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--dry-run", is_flag=True, help="Print the plan only.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
@pass_cli
def import_tasks(cli: CliContext, file: TextIO, dry_run: bool, yes: bool) -> None:
    """Upsert the tasks in FILE (JSON lines, as `tasks export` writes) by name: print the plan, then apply it.

    All or nothing: a refused line (named as lines[N], the Nth task) writes nothing.
    Without --yes it asks on a terminal, and only prints the plan otherwise.
    """
    api = cli.client()
    lines = read_json_lines(file)
    plan = api.tasks.import_(lines, dry_run=True)
    for text in render_import(plan):
        click.echo(text)
    if dry_run:
        click.echo("Not applied (dry run).")
        return
    if not plan.has_changes:
        click.echo("Nothing to do.")
        return
    if not yes:
        if not sys.stdin.isatty():
            click.echo("Not applied: run with --yes to apply.")
            return
        if not click.confirm("Apply these changes?", default=False):
            click.echo("Not applied.")
            click.get_current_context().exit(exit_codes.ERROR)
    # Upserted by name again, as the tasks are now: an edit made since the plan is imported over.
    done = api.tasks.import_(lines)
    click.echo(f"Applied: {done.created} created, {done.updated} edited, {done.unchanged} unchanged.")
