"""`jobsched rate-limits set|list|get|delete`: calls per second to an origin, kept by every executor."""

from __future__ import annotations

import click

from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit, emit_list
from jobsched_client.models import RateLimit


@click.group("rate-limits")
def rate_limits() -> None:
    """Rate limits per origin: jobs over the limit wait their turn (never fail)."""


@rate_limits.command("set")
@click.argument("origin")
@click.option("--per-second", type=float, required=True, help="Calls per second to ORIGIN (0.01-10000).")
@click.option("--burst", type=int, required=True, help="Calls allowed at once above the rate (1-10000).")
@pass_cli
def set_rate_limit(cli: CliContext, origin: str, per_second: float, burst: int) -> None:
    """Create or replace the limit for ORIGIN (scheme://host[:port])."""
    emit(cli.client().rate_limits.set(origin, per_second=per_second, burst=burst), cli.output)


@rate_limits.command("list")
@pass_cli
def list_rate_limits(cli: CliContext) -> None:
    """Every limit, newest first."""
    emit_list(list(cli.client().rate_limits.list()), cli.output, model=RateLimit)


@rate_limits.command("get")
@click.argument("limit_id")
@pass_cli
def get_rate_limit(cli: CliContext, limit_id: str) -> None:
    """One limit."""
    emit(cli.client().rate_limits.get(limit_id), cli.output)


@rate_limits.command("delete")
@click.argument("limit_id")
@pass_cli
def delete_rate_limit(cli: CliContext, limit_id: str) -> None:
    """Stop limiting that origin."""
    cli.client().rate_limits.delete(limit_id)
    click.echo(f"deleted rate limit {limit_id}", err=True)
