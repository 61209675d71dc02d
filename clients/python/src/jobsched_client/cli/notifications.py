"""`jobsched notifications set|get|delete|deliveries`: the tenant's one subscription to events, and what was sent."""

from __future__ import annotations

import itertools

import click

from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit, emit_list
from jobsched_client.models import NotificationDelivery

EVENT_TYPES = ("job.dead", "task.auto_paused", "task.completed", "task.failing")


@click.group()
def notifications() -> None:
    """Notifications: signed calls to your URL when a job dies or a task fails, pauses itself or completes."""


@notifications.command("set")
@click.option("--url", required=True, help="Where the notifications go (checked like a task's URL).")
@click.option(
    "--event", "events", multiple=True, required=True, type=click.Choice(EVENT_TYPES), help="An event type (repeat)."
)
@click.option("--failing-after", type=int, help="task.failing after this many dead jobs in a row (server default 3).")
@click.option("--enabled/--disabled", default=None, help="Send or hold the notifications (default: enabled).")
@pass_cli
def set_notifications(
    cli: CliContext, url: str, events: tuple[str, ...], failing_after: int | None, enabled: bool | None
) -> None:
    """Create or replace the subscription."""
    emit(
        cli.client().notifications.put(url=url, events=events, failing_after=failing_after, enabled=enabled),
        cli.output,
    )


@notifications.command("get")
@pass_cli
def get_notifications(cli: CliContext) -> None:
    """The subscription."""
    emit(cli.client().notifications.get(), cli.output)


@notifications.command("delete")
@pass_cli
def delete_notifications(cli: CliContext) -> None:
    """Delete the subscription (notifications already queued still go)."""
    cli.client().notifications.delete()
    click.echo("deleted the notification subscription", err=True)


@notifications.command("deliveries")
@click.option("--limit", type=int, default=50, show_default=True, help="Show at most this many.")
@pass_cli
def deliveries(cli: CliContext, limit: int) -> None:
    """The notifications sent or being sent, newest first."""
    found = cli.client().notifications.deliveries(limit=min(limit, 200))
    emit_list(itertools.islice(found, limit), cli.output, model=NotificationDelivery)
