"""`jobsched secrets ...` (values from stdin or a file, never the command line) and `jobsched signing-secrets ...`."""

from __future__ import annotations

import sys

import click

from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit, emit_list
from jobsched_client.models import Secret, SigningSecret


def read_secret_value(source: str | None) -> str:
    """The value from a file, or stdin (a hidden prompt on a terminal); one trailing newline dropped."""
    if source is not None and source != "-":
        with open(source) as handle:
            text = handle.read()
    elif sys.stdin.isatty():
        text = click.prompt("value", hide_input=True)
    else:
        text = sys.stdin.read()
    return text.removesuffix("\n").removesuffix("\r")


@click.group()
def secrets() -> None:
    """Secrets: values sent as the Authorization header of tasks naming them (secret_ref)."""


@secrets.command("list")
@pass_cli
def list_secrets(cli: CliContext) -> None:
    """Names and times (values are write-only)."""
    emit_list(cli.client().secrets.list(), cli.output, model=Secret)


@secrets.command("get")
@click.argument("name")
@pass_cli
def get_secret(cli: CliContext, name: str) -> None:
    """One secret's name and times."""
    emit(cli.client().secrets.get(name), cli.output)


@secrets.command("put")
@click.argument("name")
@click.option(
    "--from-file", "source", type=click.Path(dir_okay=False), help="Read the value from this file (- for stdin)."
)
@pass_cli
def put_secret(cli: CliContext, name: str, source: str | None) -> None:
    """Create or replace NAME; the value comes from stdin (or --from-file), never from an argument."""
    emit(cli.client().secrets.put(name, read_secret_value(source)), cli.output)


@secrets.command("delete")
@click.argument("name")
@pass_cli
def delete_secret(cli: CliContext, name: str) -> None:
    """Forget NAME."""
    cli.client().secrets.delete(name)
    click.echo(f"deleted secret {name}", err=True)


@click.group("signing-secrets")
def signing_secrets() -> None:
    """Signing keys: calls carry Standard Webhooks signatures made with them."""


@signing_secrets.command("list")
@pass_cli
def list_signing_secrets(cli: CliContext) -> None:
    """Live signing secrets (ids and times)."""
    emit_list(cli.client().signing_secrets.list(), cli.output, model=SigningSecret)


@signing_secrets.command("create")
@click.option(
    "--previous-expires-in", type=int, help="Seconds the current secret keeps signing beside the new one (0: stop now)."
)
@pass_cli
def create_signing_secret(cli: CliContext, previous_expires_in: int | None) -> None:
    """Create a signing secret; its whsec_... value is printed this once."""
    emit(cli.client().signing_secrets.create(previous_expires_in_seconds=previous_expires_in), cli.output)


@signing_secrets.command("get")
@click.argument("secret_id")
@pass_cli
def get_signing_secret(cli: CliContext, secret_id: str) -> None:
    """One live signing secret."""
    emit(cli.client().signing_secrets.get(secret_id), cli.output)


@signing_secrets.command("delete")
@click.argument("secret_id")
@pass_cli
def delete_signing_secret(cli: CliContext, secret_id: str) -> None:
    """Delete a signing secret: calls stop carrying its signature."""
    cli.client().signing_secrets.delete(secret_id)
    click.echo(f"deleted signing secret {secret_id}", err=True)
