"""`jobsched crontab apply FILE` (plan, confirm, sync) and `jobsched crontab export`."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TextIO

import click

from jobsched_client.cli import exit_codes
from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.crontab.export import export_crontab
from jobsched_client.crontab.parsing import DEFAULT_TIMEZONE, parse_crontab
from jobsched_client.crontab.sync import Change, Plan, apply_plan, check_label, file_tasks, key_of, plan_sync


def label_for(path: str, name: str | None) -> str:
    """--name, else the file's name without its suffix ("backups.cron" -> "backups")."""
    if name is None:
        if path == "-":
            raise click.UsageError("reading stdin: give --name")
        name = re.sub(r"[^a-z0-9._-]+", "-", Path(path).stem.lower()).strip("-._")
    try:
        return check_label(name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--name") from None


def _describe(change: Change) -> str:
    where = f"line {change.entry.line}" if change.entry else "not in file"
    if change.action == "update":
        return f"~ edit    {where}: {change.key}  ({', '.join(sorted(change.patch))})"
    sign = {"create": "+ create ", "delete": "- delete ", "unchanged": "  same    "}[change.action]
    return f"{sign}{where}: {change.key}"


def render_plan(plan: Plan) -> list[str]:
    lines = [
        f"crontab {plan.label!r}: {plan.count('create')} to create, {plan.count('update')} to edit, "
        f"{plan.count('delete')} to delete, {plan.count('unchanged')} unchanged"
    ]
    lines += [_describe(change) for change in plan.changes]
    if plan.left_out:
        lines.append(f"! {len(plan.left_out)} task(s) of this crontab are no longer in the file; --prune deletes them:")
        lines += [f"    {change.key}" for change in plan.left_out]
    return lines


@click.group()
def crontab() -> None:
    """Sync a crontab file with jobsched tasks (each line one task)."""


@crontab.command()
@click.argument("file", type=click.File("r"))
@click.option("--name", help="The crontab's name (its label); default: the file's name without suffix.")
@click.option("--timezone", default=DEFAULT_TIMEZONE, show_default=True, help="Zone of lines before any CRON_TZ=.")
@click.option("--prune", is_flag=True, help="Delete the crontab's tasks that are no longer in the file.")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
@pass_cli
def apply(cli: CliContext, file: TextIO, name: str | None, timezone: str, prune: bool, yes: bool) -> None:
    """Print the plan for FILE, then create, edit (If-Match) and, with --prune, delete tasks.

    Without --yes it asks on a terminal, and only prints the plan otherwise.
    Applying the same file twice changes nothing.
    """
    label = label_for(file.name, name)
    parsed = parse_crontab(file.read(), default_timezone=timezone)
    api = cli.client()
    plan = plan_sync(api, parsed, label=label, prune=prune)
    for line in render_plan(plan):
        click.echo(line)
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
    done = apply_plan(api, plan)
    click.echo(f"Applied {len(done)} change(s).")


@crontab.command()
@click.option("--name", required=True, help="The crontab's name (its label).")
@click.option("--file", "-f", "target", type=click.File("w"), default="-", help="Write here (default stdout).")
@pass_cli
def export(cli: CliContext, name: str, target: TextIO) -> None:
    """Write the crontab NAME's tasks as a crontab file (applying it changes nothing)."""
    label = label_for("-", name)
    api = cli.client()
    defaults = api.capabilities().task_defaults
    tasks = {key: task for task in file_tasks(api, label) if (key := key_of(label, task)) is not None}
    target.write(
        export_crontab(
            tasks,
            label=label,
            default_timeout=defaults.get("timeout_seconds"),
            default_attempts=defaults.get("max_attempts"),
        )
    )
