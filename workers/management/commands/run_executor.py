"""`manage.py run_executor`: claim due jobs and fire each on its second (see workers/executor/runner.py)."""

from __future__ import annotations

import asyncio
import logging

import uvloop
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from outbound.client import DeliveryClient
from outbound.egress import parse_nameservers
from outbound.tenant_lookups import LookupLimits
from tasks.targets import egress_policy
from workers.executor.credentials import Credentials
from workers.executor.runner import Executor, ExecutorConfig, default_worker_id
from workers.executor.secrets import TenantSecrets
from workers.executor.signing import SigningKeys
from workers.loop import run_worker
from workers.management.options import LOOP_CHECKS, add_loop_options, idle_seconds, start_health

logger = logging.getLogger(__name__)

# The executor runs on uvloop's event loop (libuv: its transports and timers in C; docs/benchmarks,
# Executor CPU). The prefetch's default, per call slot, and its bound (docs/benchmarks: 20 chose it).
# A held job keeps its request in memory: the claimer claims ahead only while the held requests fit
# in claimer.HELD_REQUEST_BYTES_MAX.
PREFETCH_PER_CALL = 20
MAX_PREFETCH = 50_000


class Command(BaseCommand):
    help = "Claim due jobs (SKIP LOCKED), fire each on its second, record results behind the fence."
    requires_system_checks = LOOP_CHECKS

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=200, help="calls in flight at once")
        parser.add_argument(
            "--prefetch",
            type=int,
            default=None,
            help=f"jobs held beyond the calls in flight: claimed ahead and parked, or due and waiting for a call"
            f" slot (default {PREFETCH_PER_CALL} x --concurrency; at most {MAX_PREFETCH})",
        )
        # One value, two uses: the idle sleep between claims is also how far ahead a claim
        # reaches, so a job claimed at one poll is parked at most until the next.
        add_loop_options(
            parser,
            idle_default=1.0,
            idle_help="seconds between claims when idle; also how far ahead a claim reaches",
        )
        parser.add_argument("--grace", type=float, default=30.0, help="seconds in-flight calls get after SIGTERM")
        parser.add_argument("--worker-id", default=None, help="default: pod/host name and pid")
        parser.add_argument(
            "--warm-seconds",
            type=float,
            default=0.5,
            help="open a parked group's connections this long before its second (0: off); at most one per job",
        )
        parser.add_argument("--max-connections", type=int, default=None, help="HTTP connection pool size")

    def handle(self, *args, **options):
        if options["concurrency"] < 1 or options["grace"] < 0 or options["warm_seconds"] < 0:
            raise CommandError("--concurrency must be >= 1, --grace and --warm-seconds >= 0")
        prefetch = options["prefetch"]
        if prefetch is None:
            prefetch = min(MAX_PREFETCH, PREFETCH_PER_CALL * options["concurrency"])
        if not 0 <= prefetch <= MAX_PREFETCH:
            raise CommandError(f"--prefetch must be between 0 and {MAX_PREFETCH}, got {prefetch}")
        config = ExecutorConfig(
            worker_id=options["worker_id"] or default_worker_id(),
            concurrency=options["concurrency"],
            prefetch=prefetch,
            poll_seconds=idle_seconds(options),
            grace_seconds=options["grace"],
            warm_seconds=options["warm_seconds"],
            once=options["once"],
        )
        heartbeat, _ = start_health("executor", options)
        policy = egress_policy()  # the create-time policy, parsed (and logged loudly) once at start by tasks.apps
        try:
            nameservers = parse_nameservers(settings.DNS_NAMESERVERS)
        except ValueError as exc:
            raise CommandError(f"DNS_NAMESERVERS: {exc}") from exc
        lookups = LookupLimits(
            nameservers=nameservers,
            timeout_seconds=settings.DNS_TIMEOUT_SECONDS,
            per_tenant=settings.DNS_LOOKUPS_PER_TENANT,
        )

        async def main() -> None:
            loop = type(asyncio.get_running_loop())
            logger.info("event loop", extra={"event": "event_loop", "loop": f"{loop.__module__}.{loop.__qualname__}"})
            client = DeliveryClient(
                policy=policy, max_connections=options["max_connections"] or config.concurrency, lookups=lookups
            )
            credentials = Credentials(secrets=TenantSecrets(settings.SECRETS_DIR), signing=SigningKeys())
            await Executor(config, client=client, credentials=credentials, heartbeat=heartbeat).run(
                install_signals=True
            )

        # A crash was logged with its traceback by the executor; the command adds one line and exits 1.
        def run() -> None:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(main())

        run_worker(run)
