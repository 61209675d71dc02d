"""`manage.py run_archiver`: move finished jobs to the history store, until stopped (workers/archiver.py)."""

from django.core.management.base import BaseCommand, CommandError

from history.stores import get_history_store
from workers.archiver import DEFAULT_BATCH_SIZE, DEFAULT_PURGE_LIMIT, Archiver
from workers.loop import StopFlag, WorkerLoop, run_worker
from workers.management.options import add_loop_options, idle_seconds


class Command(BaseCommand):
    help = "Move finished jobs (succeeded after 1 h, dead after 14 days) to the history store; purge expired ones."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="jobs per status per step")
        parser.add_argument("--purge-limit", type=int, default=DEFAULT_PURGE_LIMIT, help="expired rows per purge")
        add_loop_options(parser, idle_default=10.0, idle_help="seconds to sleep when there was nothing to move")

    def handle(self, *args, **options):
        if options["batch_size"] < 1 or options["purge_limit"] < 1:
            raise CommandError("--batch-size and --purge-limit must be at least 1")
        store = get_history_store()
        archiver = Archiver(store=store, batch_size=options["batch_size"], purge_limit=options["purge_limit"])
        stop = StopFlag()
        stop.install()
        once = options["once"]
        # A deployment's step logs a history-store failure and tries again later; `--once`
        # lets it propagate, so a cron-style run exits non-zero.
        step = (lambda: archiver.archive_once().full) if once else archiver.step
        loop = WorkerLoop("archiver", step, idle_seconds=idle_seconds(options), stop=stop)
        try:
            run_worker(loop.run_until_idle if once else loop.run)
        finally:
            store.close()
