"""The reference sections of docs/sdk.md and the CLI reference pages, generated from the code.

    python -m jobsched_client.docgen docs/          # rewrite the generated sections
    python -m jobsched_client.docgen --check docs/  # exit 1 when they are stale

Only the text between `<!-- BEGIN GENERATED: x -->` and `<!-- END GENERATED: x -->`
is generated; the guide around it is written by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import typing
from pathlib import Path

import click

from jobsched_client import errors, models
from jobsched_client.cli.exit_codes import EXIT_CODES
from jobsched_client.cli.main import cli
from jobsched_client.client import Client, Jobs, Schedules, Secrets, SigningSecrets, Tasks


def _first_paragraph(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


# --- the command line ------------------------------------------------------------------


def _option_row(param: click.Parameter, ctx: click.Context) -> str:
    names = ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])
    record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
    help_text = record[1] if record else ""
    return f"| {names} | {_escape(help_text)} |"


def _command_sections(
    command: click.Command, path: list[str], parent: click.Context | None, *, skip: frozenset[str] = frozenset()
) -> list[str]:
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [f"### `{' '.join(path)}`", "", f"    {' '.join(path)} {usage}", ""]
    if help_text := inspect.cleandoc(command.help or ""):
        lines += [help_text, ""]
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and "--help" not in p.opts]
    if options:
        lines += ["| option | |", "|---|---|", *(_option_row(p, ctx) for p in options), ""]
    if isinstance(command, click.Group):
        for name in sorted(set(command.commands) - skip):
            lines += _command_sections(command.commands[name], [*path, name], ctx)
    return lines


# `jobsched tasks` has a page of its own, and so do the tenant's other resources (calendars,
# notifications, rate limits): together the commands outgrow one readable page.
_OWN_PAGE = "tasks"
_RESOURCES = ("calendars", "notifications", "rate-limits")


def cli_reference() -> str:
    """Every command but `jobsched tasks …` and the resources' (their own pages), and the exit codes."""
    lines = _command_sections(cli, ["jobsched"], None, skip=frozenset({_OWN_PAGE, *_RESOURCES}))
    lines += ["### Exit codes", "", "| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {_escape(meaning)} |" for code, meaning in EXIT_CODES.items()]
    return "\n".join(lines).rstrip() + "\n"


def cli_tasks_reference() -> str:
    """`jobsched tasks …`."""
    root = click.Context(cli, info_name="jobsched")
    assert isinstance(cli, click.Group)  # the `jobsched` command is a group of commands
    lines = _command_sections(cli.commands[_OWN_PAGE], ["jobsched", _OWN_PAGE], root)
    return "\n".join(lines).rstrip() + "\n"


def cli_resources_reference() -> str:
    """`jobsched calendars …`, `jobsched notifications …`, `jobsched rate-limits …`."""
    root = click.Context(cli, info_name="jobsched")
    assert isinstance(cli, click.Group)  # the `jobsched` command is a group of commands
    lines: list[str] = []
    for name in _RESOURCES:
        lines += _command_sections(cli.commands[name], ["jobsched", name], root)
    return "\n".join(lines).rstrip() + "\n"


# --- the SDK ---------------------------------------------------------------------------


def _methods(cls: type) -> list[str]:
    lines = []
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_"):
            continue
        # The annotations are strings (postponed evaluation): shown without their quotes.
        signature = str(inspect.signature(member)).replace("(self, ", "(").replace("(self)", "()").replace("'", "")
        lines.append(f"- `{name}{signature}`" + (f": {summary}" if (summary := _first_paragraph(member)) else ""))
    return lines


def _model_fields(cls: type) -> str:
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # every entry of MODELS is a dataclass
    return ", ".join(f"`{f.name}: {_type_name(hints[f.name])}`" for f in fields)


def _type_name(tp: object) -> str:
    text = tp.__name__ if isinstance(tp, type) else str(tp)
    return re.sub(r"\b(?:jobsched_client\.models|datetime)\.", "", text.replace("typing.", ""))


def sdk_reference() -> str:
    lines = ["### `Client`", "", _first_paragraph(Client), ""]
    lines += [*_methods(Client), ""]
    resources: dict[str, type] = {
        "tasks": Tasks,
        "jobs": Jobs,
        "schedules": Schedules,
        "secrets": Secrets,
        "signing_secrets": SigningSecrets,
    }
    for attribute, cls in resources.items():
        lines += [f"### `client.{attribute}`", "", _first_paragraph(cls), "", *_methods(cls), ""]
    lines += ["### Models", "", "| model | fields |", "|---|---|"]
    for model in models.MODELS:
        summary = _first_paragraph(model)
        lines.append(
            f"| `{model.__name__}` | {_escape(_model_fields(model))}{'<br>' + _escape(summary) if summary else ''} |"
        )
    lines += ["", "### Errors", "", "| error | when |", "|---|---|"]
    for name, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, errors.JobschedError) and cls.__module__ == errors.__name__:
            base = cls.__mro__[1].__name__
            lines.append(f"| `{name}` ({base}) | {_escape(_first_paragraph(cls))} |")
    return "\n".join(lines).rstrip() + "\n"


# --- writing the pages -----------------------------------------------------------------

GENERATORS = {
    "sdk.md": ("sdk-reference", sdk_reference),
    "cli-reference.md": ("cli-reference", cli_reference),
    "cli-reference-tasks.md": ("cli-reference-tasks", cli_tasks_reference),
    "cli-reference-resources.md": ("cli-reference-resources", cli_resources_reference),
}


def with_generated(text: str, section: str, content: str) -> str:
    begin, end = f"<!-- BEGIN GENERATED: {section} -->", f"<!-- END GENERATED: {section} -->"
    head, found, rest = text.partition(begin)
    if not found or end not in rest:
        raise ValueError(f"the page has no {begin} ... {end} section")
    return f"{head}{begin}\n{content}{end}{rest.partition(end)[2]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("docs", type=Path, help="the docs directory holding sdk.md and the CLI reference pages")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when a page is stale")
    args = parser.parse_args(argv)
    stale = []
    for page, (section, generate) in GENERATORS.items():
        path = args.docs / page
        current = path.read_text()
        wanted = with_generated(current, section, generate())
        if wanted != current:
            stale.append(page)
            if not args.check:
                path.write_text(wanted)
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run python -m jobsched_client.docgen {args.docs})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
