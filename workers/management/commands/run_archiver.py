"""`manage.py run_archiver`: move finished jobs to the history store, until stopped."""

from django.core.management.base import BaseCommand, CommandError

from history.base import HistoryUnavailable
from history.stores import get_history_store
from workers.archiver import DEFAULT_BATCH_SIZE, DEFAULT_PURGE_LIMIT, Archiver
from workers.loop import StopFlag, WorkerLoop


class Command(BaseCommand):
    help = "Move finished jobs (succeeded after 1 h, dead after 14 days) to the history store; purge expired ones."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="jobs per status per step")
        parser.add_argument("--purge-limit", type=int, default=DEFAULT_PURGE_LIMIT, help="expired rows per purge")
        parser.add_argument("--idle-seconds", type=float, default=10.0, help="sleep when there was nothing to move")
        parser.add_argument(
            "--max-backoff-seconds",
            type=float,
            default=30.0,
            help="longest wait between retries while the history store is unavailable",
        )
        parser.add_argument(
            "--once", action="store_true", help="archive until nothing is eligible, then exit; an error exits non-zero"
        )

    def handle(self, *args, **options):
        if options["batch_size"] < 1 or options["purge_limit"] < 1:
            raise CommandError("--batch-size and --purge-limit must be at least 1")
        store = get_history_store()
        archiver = Archiver(store=store, batch_size=options["batch_size"], purge_limit=options["purge_limit"])
        stop = StopFlag()
        stop.install()
        try:
            if options["once"]:
                # Errors propagate (a non-zero exit for cron-style use) instead of a retry later.
                while archiver.archive_once().full and not stop.is_set():
                    pass
            else:
                # A history store that is away backs off (0.5 s doubling); its jobs stay queued meanwhile.
                WorkerLoop(
                    "archiver",
                    lambda: archiver.archive_once().full,
                    idle_seconds=options["idle_seconds"],
                    stop=stop,
                    unavailable=(HistoryUnavailable,),
                    max_backoff_seconds=options["max_backoff_seconds"],
                ).run()
        finally:
            store.close()
