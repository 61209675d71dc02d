"""`jobsched calendars put|get|list|delete`: named sets of local dates a task's runs skip."""

from __future__ import annotations

import json
from typing import TextIO

import click

from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit, emit_list
from jobsched_client.models import Calendar, CalendarSpec


def _range(text: str) -> dict[str, str]:
    start, sep, end = text.partition("..")
    if not sep or not start or not end:
        raise click.BadParameter(f"{text!r}: give FROM..TO, e.g. 2027-08-01..2027-08-15")
    return {"from": start, "to": end}


@click.group()
def calendars() -> None:
    """Calendars: dates in a time zone; tasks naming one in schedule.exclude_calendars skip runs on them."""


@calendars.command("list")
@pass_cli
def list_calendars(cli: CliContext) -> None:
    """Every calendar, by name."""
    emit_list(cli.client().calendars.list(), cli.output, model=Calendar)


@calendars.command("get")
@click.argument("name")
@pass_cli
def get_calendar(cli: CliContext, name: str) -> None:
    """One calendar: its zone, dates and ranges."""
    emit(cli.client().calendars.get(name), cli.output)


@calendars.command("put")
@click.argument("name")
@click.option("--timezone", "zone", help="IANA zone the dates are local to (default UTC).")
@click.option("--date", "dates", multiple=True, metavar="YYYY-MM-DD", help="A date (repeat it).")
@click.option("--range", "ranges", multiple=True, metavar="FROM..TO", help="Dates from FROM to TO, both included.")
@click.option(
    "--from-file",
    "file",
    type=click.File("r"),
    help='The whole body as JSON ({"timezone", "dates", "ranges"}); - for stdin. Replaces the options above.',
)
@click.option("--if-match", "etag", help='Replace only if the calendar is still at this ETag (e.g. "3").')
@pass_cli
def put_calendar(
    cli: CliContext,
    name: str,
    zone: str | None,
    dates: tuple[str, ...],
    ranges: tuple[str, ...],
    file: TextIO | None,
    etag: str | None,
) -> None:
    """Create or replace NAME (the whole calendar)."""
    if file is not None:
        body: CalendarSpec | dict = json.load(file)
    else:
        body = CalendarSpec(timezone=zone or "UTC", dates=list(dates), ranges=[_range(text) for text in ranges])
    emit(cli.client().calendars.put(name, body, etag=etag), cli.output)


@calendars.command("delete")
@click.argument("name")
@pass_cli
def delete_calendar(cli: CliContext, name: str) -> None:
    """Delete NAME (refused while a task excludes it)."""
    cli.client().calendars.delete(name)
    click.echo(f"deleted calendar {name}", err=True)
