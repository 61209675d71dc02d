"""`jobsched config`: profiles (a URL and where the token comes from) in the config file."""

from __future__ import annotations

import click

from jobsched_client.cli import profiles
from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit


@click.group()
def config() -> None:
    """Profiles: API URL, and the token from an environment variable or a command."""


@config.command("set")
@click.argument("profile")
@click.option("--url", help="API base URL, e.g. https://jobsched.example.com")
@click.option("--token-env", help="Read the token from this environment variable.")
@click.option("--token-command", help="Run this command (no shell) and use its output as the token.")
@click.option("--default/--no-default", "make_default", default=None, help="Make it the default profile.")
def set_profile(
    profile: str, url: str | None, token_env: str | None, token_command: str | None, make_default: bool | None
) -> None:
    """Create or change PROFILE (only the options given change)."""
    if token_env and token_command:
        raise click.UsageError("give --token-env or --token-command, not both")
    data = profiles.load()
    entry = dict(data["profiles"].get(profile) or {})
    if url:
        entry["url"] = url
    if token_env:
        entry.pop("token_command", None)
        entry["token_env"] = token_env
    if token_command:
        entry.pop("token_env", None)
        entry["token_command"] = token_command
    data["profiles"][profile] = entry
    if make_default or (make_default is None and not data.get("default")):
        data["default"] = profile
    path = profiles.save(data)
    click.echo(f"profile {profile!r} saved in {path}", err=True)


@config.command("use")
@click.argument("profile")
def use_profile(profile: str) -> None:
    """Make PROFILE the default."""
    data = profiles.load()
    if profile not in data["profiles"]:
        raise click.BadParameter(f"no profile {profile!r}", param_hint="PROFILE")
    data["default"] = profile
    profiles.save(data)


@config.command("show")
@pass_cli
def show(cli: CliContext) -> None:
    """Print the profiles and which one is the default (tokens are never stored, so never shown)."""
    data = profiles.load()
    emit({"config_file": str(profiles.config_path()), **data}, cli.output)


@config.command("delete")
@click.argument("profile")
def delete_profile(profile: str) -> None:
    """Forget PROFILE."""
    data = profiles.load()
    if data["profiles"].pop(profile, None) is None:
        raise click.BadParameter(f"no profile {profile!r}", param_hint="PROFILE")
    if data.get("default") == profile:
        data.pop("default")
    profiles.save(data)
