"""How results are printed: `--output table` (people), `json` or `yaml` (scripts)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import click
import yaml

from jobsched_client.models import (
    Calendar,
    Job,
    NotificationDelivery,
    PreviewRun,
    RateLimit,
    Secret,
    SigningSecret,
    Task,
    TaskChange,
    to_json,
)

FORMATS = ("table", "json", "yaml")


def _schedule(task: Task) -> str:
    if task.schedule.cron is not None:
        return f"{task.schedule.cron} ({task.schedule.timezone})"
    if task.schedule.every is not None:
        return f"every {task.schedule.every}"
    return f"at {to_json(task.schedule.run_at)}"


# The columns of a list, per model: (header, value).
COLUMNS: dict[type, list[tuple[str, Callable[[Any], object]]]] = {
    Task: [
        ("ID", lambda t: t.id),
        ("NAME", lambda t: t.name),
        ("STATUS", lambda t: t.status),
        ("SCHEDULE", _schedule),
        ("NEXT RUN", lambda t: to_json(t.next_run_at) or "-"),
        ("LABELS", lambda t: ",".join(f"{k}={v}" for k, v in sorted(t.labels.items())) or "-"),
    ],
    Job: [
        ("ID", lambda j: j.id),
        ("TASK", lambda j: j.task_id),
        ("STATUS", lambda j: j.status),
        ("SCHEDULED", lambda j: to_json(j.scheduled_at)),
        ("ATTEMPT", lambda j: f"{j.attempt}/{j.max_attempts}"),
        ("HTTP", lambda j: j.http_status if j.http_status is not None else "-"),
    ],
    Secret: [
        ("NAME", lambda s: s.name),
        ("VERSION", lambda s: s.version),
        ("UPDATED", lambda s: to_json(s.updated_at)),
    ],
    Calendar: [
        ("NAME", lambda c: c.name),
        ("TIMEZONE", lambda c: c.timezone),
        ("DATES", lambda c: len(c.dates)),
        ("RANGES", lambda c: len(c.ranges)),
        ("VERSION", lambda c: c.version),
    ],
    SigningSecret: [
        ("ID", lambda s: s.id),
        ("CREATED", lambda s: to_json(s.created_at)),
        ("EXPIRES", lambda s: to_json(s.expires_at) or "-"),
    ],
    RateLimit: [
        ("ID", lambda r: r.id),
        ("ORIGIN", lambda r: r.origin),
        ("PER SECOND", lambda r: f"{r.per_second:g}"),
        ("BURST", lambda r: r.burst),
    ],
    TaskChange: [
        ("AT", lambda c: to_json(c.at)),
        ("ACTION", lambda c: c.action),
        ("ACTOR", lambda c: c.actor),
        ("FIELDS", lambda c: ",".join(entry.field for entry in c.changes) or "-"),
    ],
    NotificationDelivery: [
        ("EVENT", lambda d: d.event_id),
        ("TYPE", lambda d: d.event_type or "-"),
        ("STATUS", lambda d: d.status),
        ("ATTEMPTS", lambda d: d.attempts),
        ("HTTP", lambda d: d.http_status if d.http_status is not None else "-"),
        ("CREATED", lambda d: to_json(d.created_at)),
    ],
    PreviewRun: [
        ("AT (UTC)", lambda r: to_json(r.at)),
        ("LOCAL", lambda r: r.local),
        ("DST", lambda r: "yes" if r.dst else "no"),
        (
            "NOTE",
            lambda r: (
                f"skipped: calendar {r.excluded_by}"
                if r.excluded_by
                else ("late" if r.late else (f"offset was {r.offset_changed_from}" if r.offset_changed_from else ""))
            ),
        ),
    ],
}


def table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _flatten(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(data, dict) and data:
        return [pair for key, value in data.items() for pair in _flatten(value, f"{prefix}{key}.")]
    shown = (
        "-" if data is None or data == {} or data == [] else (json.dumps(data) if isinstance(data, list) else str(data))
    )
    return [(prefix.rstrip("."), shown)]


def emit(value: Any, output: str) -> None:
    """Print one model, or a list of models, in the chosen format."""
    if output == "json":
        click.echo(json.dumps(to_json(value), indent=2))
    elif output == "yaml":
        click.echo(yaml.safe_dump(to_json(value), sort_keys=False).rstrip())
    elif isinstance(value, list):
        emit_list(value, output)
    else:
        click.echo(table([[key, shown] for key, shown in _flatten(to_json(value))]))


def emit_list(items: Iterable[Any], output: str, *, model: type | None = None) -> None:
    items = list(items)
    if output != "table":
        emit(items, output)
        return
    columns = COLUMNS[model or (type(items[0]) if items else Task)]
    if not items:
        click.echo("(none)")
        return
    click.echo(table([[header for header, _ in columns]] + [[str(get(item)) for _, get in columns] for item in items]))
