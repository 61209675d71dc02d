"""`jobsched jobs get|retry|cancel`, `jobsched dlq` and `jobsched history TASK_ID`."""

from __future__ import annotations

import itertools

import click

from jobsched_client.cli.context import CliContext, pass_cli
from jobsched_client.cli.output import emit, emit_list
from jobsched_client.models import Job


@click.group()
def jobs() -> None:
    """Jobs: one run of a task each."""


@jobs.command("get")
@click.argument("job_id")
@pass_cli
def get_job(cli: CliContext, job_id: str) -> None:
    """One job, from the queue or the history."""
    emit(cli.client().jobs.get(job_id), cli.output)


@jobs.command("retry")
@click.argument("job_id")
@pass_cli
def retry_job(cli: CliContext, job_id: str) -> None:
    """Put a dead job back in the queue."""
    emit(cli.client().jobs.retry(job_id), cli.output)


@jobs.command("cancel")
@click.argument("job_id")
@pass_cli
def cancel_job(cli: CliContext, job_id: str) -> None:
    """Take a pending job out of the queue for good."""
    emit(cli.client().jobs.cancel(job_id), cli.output)


@click.command()
@click.option("--task", "task_id", help="Only this task's dead jobs.")
@click.option("--limit", type=int, help="Show at most this many (default: all).")
@pass_cli
def dlq(cli: CliContext, task_id: str | None, limit: int | None) -> None:
    """The dead-letter queue: dead jobs still retryable, newest first."""
    found = cli.client().jobs.dlq(task_id=task_id, limit=min(limit, 100) if limit else None)
    emit_list(itertools.islice(found, limit), cli.output, model=Job)


@click.command()
@click.argument("task_id")
@click.option("--limit", type=int, default=50, show_default=True, help="Show at most this many.")
@pass_cli
def history(cli: CliContext, task_id: str, limit: int) -> None:
    """A task's jobs, newest first, from the queue and the history."""
    found = cli.client().tasks.history(task_id, limit=min(limit, 100))
    emit_list(itertools.islice(found, limit), cli.output, model=Job)
