"""Turn due tasks into jobs, one transaction per tick (see workers/scheduler.py)."""

from django.core.management.base import BaseCommand, CommandError

from workers.loop import StopFlag, WorkerLoop
from workers.scheduler import DEFAULT_BATCH_SIZE, DEFAULT_LOOKAHEAD_SECONDS, Scheduler


class Command(BaseCommand):
    help = (
        "Create a job for every due task run: tick at once while work is due (a full batch, or "
        "tasks still catching up), otherwise sleep the idle interval. SIGTERM/SIGINT stop it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--lookahead",
            type=float,
            default=DEFAULT_LOOKAHEAD_SECONDS,
            help="seconds ahead of now a run is due (jobs exist before their second); default %(default)s",
        )
        parser.add_argument(
            "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="tasks per tick; default %(default)s"
        )
        parser.add_argument("--idle", type=float, default=1.0, help="seconds to sleep when nothing is due")
        parser.add_argument(
            "--once",
            action="store_true",
            help="tick until nothing is due, then exit (cron-style use, tests); errors exit non-zero",
        )

    def handle(self, *args, **options):
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        if options["lookahead"] < 0:
            raise CommandError("--lookahead must not be negative")
        if options["idle"] <= 0:
            raise CommandError("--idle must be positive")
        scheduler = Scheduler(batch_size=options["batch_size"], lookahead_seconds=options["lookahead"])
        stop = StopFlag()
        stop.install()
        if options["once"]:
            # Straight calls, not the loop's run_step: a cron-style run must fail loudly.
            while scheduler.step() and not stop.is_set():
                pass
            return
        WorkerLoop("scheduler", scheduler.step, idle_seconds=options["idle"], stop=stop).run()
