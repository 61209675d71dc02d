"""`manage.py run_reconciler`: return jobs whose lease expired, sweeping while sweeps fill (workers/reconciler.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from workers.loop import StopFlag, WorkerLoop, run_worker
from workers.management.options import add_loop_options, idle_seconds
from workers.reconciler import DEFAULT_SWEEP_LIMIT, reconcile_step


class Command(BaseCommand):
    help = "Return running jobs whose lease expired to pending (or dead at max_attempts)."

    def add_arguments(self, parser):
        add_loop_options(
            parser, idle_default=5.0, idle_help="seconds between sweeps when idle", aliases=("--interval",)
        )
        parser.add_argument("--limit", type=int, default=DEFAULT_SWEEP_LIMIT, help="rows per UPDATE")

    def handle(self, *args, **options):
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        limit = options["limit"]
        stop = StopFlag()
        stop.install()
        loop = WorkerLoop(
            "reconciler", lambda: reconcile_step(limit=limit), idle_seconds=idle_seconds(options), stop=stop
        )
        run_worker(loop.run_until_idle if options["once"] else loop.run)
