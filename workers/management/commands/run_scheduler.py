"""`manage.py run_scheduler`: turn due tasks into jobs, one transaction per tick (workers/scheduler.py)."""

from django.core.management.base import BaseCommand, CommandError

from workers.loop import StopFlag, WorkerLoop, run_worker
from workers.management.options import LOOP_CHECKS, add_loop_options, idle_seconds, start_health
from workers.scheduler import DEFAULT_BATCH_SIZE, DEFAULT_LOOKAHEAD_SECONDS, Scheduler


class Command(BaseCommand):
    help = (
        "Create a job for every due task run: tick at once while work is due (a full batch, or "
        "tasks still catching up), otherwise sleep the idle interval. SIGTERM/SIGINT stop it."
    )
    requires_system_checks = LOOP_CHECKS

    def add_arguments(self, parser):
        parser.add_argument(
            "--lookahead",
            type=float,
            default=DEFAULT_LOOKAHEAD_SECONDS,
            help="seconds ahead of now a run is due (jobs exist before their second); default %(default)s",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=DEFAULT_BATCH_SIZE,
            help="tasks per tick (after a full tick the next takes twice as many, up to four batches); "
            "default %(default)s",
        )
        add_loop_options(parser, idle_default=1.0, idle_help="seconds to sleep when nothing is due")

    def handle(self, *args, **options):
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        if options["lookahead"] < 0:
            raise CommandError("--lookahead must not be negative")
        scheduler = Scheduler(batch_size=options["batch_size"], lookahead_seconds=options["lookahead"])
        stop = StopFlag()
        stop.install()
        heartbeat, _ = start_health("scheduler", options)
        loop = WorkerLoop(
            "scheduler", scheduler.step, idle_seconds=idle_seconds(options), stop=stop, heartbeat=heartbeat
        )
        run_worker(loop.run_until_idle if options["once"] else loop.run)
