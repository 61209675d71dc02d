"""`jobsched`: the root command, its global options, and errors turned into exit codes (exit_codes.py)."""

from __future__ import annotations

from typing import Any

import click

from jobsched_client.cli import (
    calendars,
    config,
    crontab,
    exit_codes,
    jobs,
    notifications,
    profiles,
    rate_limits,
    secrets,
    tasks,
)
from jobsched_client.cli.context import CliContext
from jobsched_client.cli.output import FORMATS
from jobsched_client.crontab.parsing import CrontabError
from jobsched_client.errors import JobschedError
from jobsched_client.version import __version__


class JobschedGroup(click.Group):
    """Report the SDK's errors on stderr, one line each, and exit with their documented code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except JobschedError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exit_codes.exit_code_for(exc))
        except profiles.ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exit_codes.NOT_CONFIGURED)
        except CrontabError as exc:
            for problem in exc.problems:
                click.echo(f"error: {problem}", err=True)
            ctx.exit(exit_codes.INVALID)


@click.group(cls=JobschedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--profile", "-p", envvar=profiles.PROFILE_VARIABLE, help="Profile to use (default: the config's default)."
)
@click.option("--url", help=f"API base URL (overrides ${profiles.URL_VARIABLE} and the profile).")
@click.option(
    "--output", "-o", type=click.Choice(FORMATS), default="table", show_default=True, help="How to print results."
)
@click.version_option(__version__, prog_name="jobsched")
@click.pass_context
def cli(ctx: click.Context, profile: str | None, url: str | None, output: str) -> None:
    """Manage jobsched tasks, jobs and secrets, and sync crontab files.

    The token is never an option (command lines are visible to other users):
    it comes from $JOBSCHED_TOKEN or the profile's token_env or token_command.
    """
    ctx.obj = CliContext(profile=profile, url=url, output=output)


cli.add_command(config.config)
cli.add_command(tasks.tasks)
cli.add_command(jobs.jobs)
cli.add_command(jobs.dlq)
cli.add_command(jobs.history)
cli.add_command(secrets.secrets)
cli.add_command(secrets.signing_secrets)
cli.add_command(rate_limits.rate_limits)
cli.add_command(notifications.notifications)
cli.add_command(calendars.calendars)
cli.add_command(crontab.crontab)


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script, e.g. `eval "$(jobsched completion bash)"`."""
    from click.shell_completion import get_completion_class

    completion_class = get_completion_class(shell)
    assert completion_class is not None  # the three choices are click's own
    click.echo(completion_class(cli, {}, "jobsched", "_JOBSCHED_COMPLETE").source())


def main() -> None:
    cli(prog_name="jobsched")


if __name__ == "__main__":
    main()
