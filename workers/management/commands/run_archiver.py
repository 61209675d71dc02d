"""`manage.py run_archiver`: move finished jobs to the history store, until stopped (workers/archiver.py)."""

from django.core.management.base import BaseCommand, CommandError

from history.base import HistoryUnavailable
from history.stores import get_history_store
from workers.archiver import DEFAULT_BATCH_SIZE, DEFAULT_PURGE_LIMIT, Archiver
from workers.loop import ReconnectBackoff, StopFlag, WorkerLoop, run_worker
from workers.management.options import LOOP_CHECKS, add_loop_options, idle_seconds, start_health
from workers.metrics import ARCHIVER_FAILURES


class Command(BaseCommand):
    help = "Move finished jobs (succeeded after 1 h, dead after 14 days) to the history store; purge expired ones."
    requires_system_checks = LOOP_CHECKS

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="jobs per status per step")
        parser.add_argument(
            "--purge-limit", type=int, default=DEFAULT_PURGE_LIMIT, help="expired rows per purge (history, run keys)"
        )
        add_loop_options(parser, idle_default=10.0, idle_help="seconds to sleep when there was nothing to move")
        parser.add_argument(
            "--max-backoff-seconds",
            type=float,
            default=30.0,
            help="longest wait between retries while the history store is unavailable",
        )

    def handle(self, *args, **options):
        if options["batch_size"] < 1 or options["purge_limit"] < 1:
            raise CommandError("--batch-size and --purge-limit must be at least 1")
        if options["max_backoff_seconds"] < 0.5:
            raise CommandError("--max-backoff-seconds must be at least 0.5")
        store = get_history_store()
        archiver = Archiver(store=store, batch_size=options["batch_size"], purge_limit=options["purge_limit"])
        stop = StopFlag()
        stop.install()
        # A history store that is away backs off (from 0.5 s, doubling, jittered, up to
        # --max-backoff-seconds); its jobs stay in MySQL meanwhile. The database keeps the
        # loops' own low-capped policy. Under `--once` the error ends the run instead, so a
        # cron-style run exits non-zero.

        def step() -> bool:
            try:
                return archiver.archive_once().full
            except HistoryUnavailable:
                ARCHIVER_FAILURES.inc()
                raise

        heartbeat, _ = start_health("archiver", options)
        loop = WorkerLoop(
            "archiver",
            step,
            idle_seconds=idle_seconds(options),
            stop=stop,
            unavailable=(HistoryUnavailable,),
            unavailable_backoff=ReconnectBackoff(initial=0.5, cap=options["max_backoff_seconds"]),
            heartbeat=heartbeat,
        )
        try:
            run_worker(loop.run_until_idle if options["once"] else loop.run)
        finally:
            store.close()
