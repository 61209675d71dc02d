"""`manage.py run_reconciler`: return jobs whose lease expired, sweeping while sweeps fill (workers/reconciler.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from workers.loop import StopFlag, WorkerLoop, run_worker
from workers.management.options import LOOP_CHECKS, add_loop_options, idle_seconds, start_health
from workers.queue_stats import DEFAULT_INTERVAL_SECONDS, QueueStats
from workers.reconciler import DEFAULT_SWEEP_LIMIT, reconcile_step


class Command(BaseCommand):
    help = "Return running jobs whose lease expired to pending (or dead at max_attempts)."
    requires_system_checks = LOOP_CHECKS

    def add_arguments(self, parser):
        add_loop_options(parser, idle_default=5.0, idle_help="seconds between sweeps when idle")
        parser.add_argument("--limit", type=int, default=DEFAULT_SWEEP_LIMIT, help="rows per UPDATE")
        parser.add_argument(
            "--stats-interval",
            type=float,
            default=DEFAULT_INTERVAL_SECONDS,
            help="seconds between reads of the queue's gauges (by the one replica holding the stats lock);"
            " default %(default)s",
        )

    def handle(self, *args, **options):
        if options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        if options["stats_interval"] <= 0:
            raise CommandError("--stats-interval must be positive")
        limit = options["limit"]
        stats = QueueStats(interval_seconds=options["stats_interval"])

        def step() -> bool:
            found_work = reconcile_step(limit=limit)
            stats.maybe_report()  # the queue's gauges, on one replica only (workers/queue_stats.py)
            return found_work

        stop = StopFlag()
        stop.install()
        heartbeat, _ = start_health("reconciler", options)
        loop = WorkerLoop("reconciler", step, idle_seconds=idle_seconds(options), stop=stop, heartbeat=heartbeat)
        run_worker(loop.run_until_idle if options["once"] else loop.run)
