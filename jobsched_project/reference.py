"""The documentation's reference pages, generated from the code that defines them.

- settings: every variable settings.py reads (the helpers record each with its default), its
  group and meaning from `setting_docs`;
- management commands: each command's argparse parser (its help and every option's help);
- the OpenAPI schema, as drf-spectacular serves it at /v1/schema.

`python -m jobsched_project.reference OUT_DIR` writes `settings.md`, `commands.md` and
`openapi.json` there; the MkDocs hook (scripts/mkdocs_hooks.py) runs it on every build, so the
pages cannot drift from the code. It runs in a process of its own, with none of the documented
variables set, so the defaults shown are the code's, not this shell's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# The commands an operator or developer runs (Django's own are documented by Django).
PROJECT_APPS = ("workers", "tasks", "jobs", "history", "signing", "vault")
# Options every Django command has; listed once, not per command.
_COMMON_OPTIONS = {
    "--help",
    "--version",
    "--verbosity",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
}
# Values that let settings.py import with DEBUG off (their own defaults are "required").
_PLACEHOLDERS = {
    "SECRET_KEY": "reference-placeholder-" + "x" * 40,
    "JWT_VERIFYING_KEY": "reference-placeholder-jwt-secret-of-32-bytes-or-more",
    "SECRETS_ENCRYPTION_KEYS": "cmVmZXJlbmNlLXBsYWNlaG9sZGVyLWZlcm5ldC1rZXk=",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def format_default(value: object) -> str:
    """A code default as the reference shows it."""
    if value is None or value == "" or value == []:
        return "empty"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list | tuple):
        return "`" + ",".join(str(item) for item in value) + "`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 86400 and value % 86400 == 0:
        return f"`{value}` ({value // 86400} days)"
    return f"`{value}`"


def settings_markdown() -> str:
    """The settings reference: one table per group, then the scripts' and tests' variables."""
    import importlib

    from jobsched_project import setting_docs

    importlib.import_module("jobsched_project.settings")  # fills setting_docs.DEFAULTS
    lines = [
        "# Settings",
        "",
        "Every setting is an environment variable, read once at start by `jobsched_project/settings.py`;",
        "a bad value stops the process with the setting's name. This page is generated from the code",
        "(`jobsched_project/setting_docs.py` and the defaults settings.py passes), so it cannot drift.",
        "`make run` writes the development ones to `.env`, which `manage.py` reads in a plain shell.",
        "",
    ]
    for group in setting_docs.GROUPS:
        names = [name for name, doc in setting_docs.SETTINGS.items() if doc.group == group]
        lines += [f"## {group}", "", "| variable | default | meaning |", "|---|---|---|"]
        for name in names:
            doc = setting_docs.SETTINGS[name]
            default = doc.default or format_default(setting_docs.DEFAULTS.get(name))
            lines.append(f"| `{name}` | {_cell(default)} | {_cell(doc.meaning)} |")
        lines.append("")
    lines += [
        "## Development, scripts and tests",
        "",
        "Read by the Makefile, the scripts or the tests, never by a deployed process.",
        "",
        "| variable | read by | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, tool in setting_docs.TOOL_SETTINGS.items():
        lines.append(f"| `{name}` | `{tool.read_by}` | {_cell(tool.default)} | {_cell(tool.meaning)} |")
    return "\n".join(lines) + "\n"


def _option_row(action: argparse.Action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.dest}`"
    default = action.default
    if default in (None, False, argparse.SUPPRESS) or isinstance(action, argparse._StoreTrueAction):
        shown = ""
    else:
        shown = f"`{default}`"
    help_text = (action.help or "").replace("%(default)s", str(default)).replace("%%", "%")
    if action.required:
        help_text = "required; " + help_text
    return f"| {names} | {shown} | {_cell(help_text)} |"


def commands_markdown() -> str:
    """Every management command of the project's apps, from its own parser."""
    import django
    from django.core.management import get_commands, load_command_class

    django.setup()
    lines = [
        "# Management commands",
        "",
        "`manage.py <command> --help` prints the same; this page is generated from each command's parser.",
        "Every command also takes Django's common options (`--verbosity`, `--settings`, `--traceback`, ...).",
        "",
    ]
    commands = sorted((name, app) for name, app in get_commands().items() if app in PROJECT_APPS)
    for name, app in commands:
        command = load_command_class(app, name)
        parser = command.create_parser("manage.py", name)
        options = [
            action
            for action in parser._actions
            if not set(action.option_strings) & _COMMON_OPTIONS and action.dest != "help"
        ]
        lines += [f"## `{name}`", "", f"{_cell(command.help)} (`{app}`)", ""]
        if options:
            lines += ["| option | default | meaning |", "|---|---|---|"]
            lines += [_option_row(action) for action in options]
            lines.append("")
    return "\n".join(lines) + "\n"


def openapi_json() -> str:
    """The schema /v1/schema serves (drf-spectacular, with api.openapi's hook)."""
    import django
    from drf_spectacular.generators import SchemaGenerator

    django.setup()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.dumps(schema, indent=1, sort_keys=False, default=str)


def _isolate_environment() -> None:
    """None of the documented variables from this shell: the defaults shown are the code's."""
    from jobsched_project import setting_docs

    for name in setting_docs.SETTINGS:
        os.environ.pop(name, None)
    os.environ.update(_PLACEHOLDERS)
    os.environ["DJANGO_SETTINGS_MODULE"] = "jobsched_project.settings"


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    _isolate_environment()
    (out / "settings.md").write_text(settings_markdown())
    (out / "commands.md").write_text(commands_markdown())
    (out / "openapi.json").write_text(openapi_json())


if __name__ == "__main__":
    main()
