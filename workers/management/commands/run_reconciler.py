"""`manage.py run_reconciler`: every interval, return jobs whose lease expired (workers/reconciler.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from workers.loop import StopFlag, WorkerLoop
from workers.reconciler import DEFAULT_SWEEP_LIMIT, reconcile_step


class Command(BaseCommand):
    help = "Return running jobs whose lease expired to pending (or dead at max_attempts)."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=5.0, help="seconds between sweeps when idle")
        parser.add_argument("--limit", type=int, default=DEFAULT_SWEEP_LIMIT, help="rows per UPDATE")
        parser.add_argument("--once", action="store_true", help="one step, then exit")

    def handle(self, *args, **options):
        if options["interval"] <= 0 or options["limit"] < 1:
            raise CommandError("--interval must be > 0 and --limit >= 1")
        stop = StopFlag()
        stop.install()
        limit = options["limit"]
        loop = WorkerLoop(
            "reconciler", lambda: reconcile_step(limit=limit), idle_seconds=options["interval"], stop=stop
        )
        loop.run(once=options["once"])
