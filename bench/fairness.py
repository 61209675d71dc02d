"""`manage.py bench_fairness` (DJANGO_SETTINGS_MODULE=bench.settings): the fair claim's cost, a noisy neighbour.

On a dedicated database (default `jobsched_bench_fair`, created and migrated
here, emptied each run), in two parts; prints and writes `.bench/fairness.json`.

1. Claim cost, in this process on Django's connection: `--future-jobs` pending
   jobs due tomorrow over `--claim-tenants` tenants, the empty poll timed; then
   every one of those tenants gets 3 due jobs and one more tenant a burst of
   `--burst`, and `--claim-samples` claims of 500 are timed, fair and
   priority-first (the round-1 claim), with the statements each one sent.
2. Noisy neighbour, per `--modes` (off = the round-1 claim, bench_run_executor_round1; on = the
   product's run_executor): a local
   receiver and `--executors` real `run_executor` processes (`--concurrency`
   each); tenant-a gets `--burst` jobs due at second D, then tenants b..k
   `--small-jobs` each at D (their ids made after tenant-a's, so they sort last by id; their
   few rows written first, so a slow insert of the burst cannot hide them from a claim). Reports
   b..k's lateness (arrival at the receiver - D, p50 and max) and tenant-a's
   drain (its last arrival - D). Goal: b..k within 100 ms of D with fairness
   on, tenant-a's drain at most 10 % longer than with it off.
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from bench.database import connect, db_now, insert_jobs, use_database, whole_second_after
from bench.procs import Child, start_executors, stop_all
from bench.receiver import Receiver
from bench.round1_claim import claim_priority_first
from database.reachability import database_url_for
from domain.ids import new_id
from jobs.fairness import TenantCursor
from jobs.queue.claims import claim_fair_share

EMPTY_POLL_SAMPLES = 200
CLAIM_LIMIT = 500
NOISY = "tenant-a"
QUIET = [f"tenant-{letter}" for letter in "bcdefghijk"]
GOAL_QUIET_LATENESS_SECONDS = 0.1
GOAL_NOISY_SLOWDOWN = 0.10


def _ms(seconds: float) -> float:
    return round(1000 * seconds, 3)


class Command(BaseCommand):
    help = "Benchmark fairness: the fair claim's cost, and a noisy neighbour with fairness off and on."

    def add_arguments(self, parser):
        parser.add_argument("--burst", type=int, default=30000, help="tenant-a's jobs due at one second")
        parser.add_argument("--small-jobs", type=int, default=10, help="jobs of each of tenants b..k")
        parser.add_argument("--executors", type=int, default=2)
        parser.add_argument("--concurrency", type=int, default=500, help="per executor")
        parser.add_argument("--modes", default="off,on", help="fairness off (round-1 claim) and/or on")
        parser.add_argument("--future-jobs", type=int, default=100000, help="claim cost: pending jobs due tomorrow")
        parser.add_argument("--claim-tenants", type=int, default=10000, help="claim cost: tenants with due jobs")
        parser.add_argument("--claim-samples", type=int, default=20, help="claim cost: claims of 500 timed")
        parser.add_argument("--skip-claim-cost", action="store_true")
        parser.add_argument("--skip-noisy-neighbour", action="store_true")
        parser.add_argument("--database", default="jobsched_bench_fair")
        parser.add_argument("--lead-seconds", type=float, default=6.0, help="from the inserts to the due second")
        parser.add_argument("--timeout", type=float, default=120.0)
        parser.add_argument("--out", default=".bench/fairness.json")

    # -- part 1: the claim's cost -----------------------------------------------

    def _statements_sent(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute("SHOW SESSION STATUS LIKE 'Questions'")
            return int(cursor.fetchone()[1])

    def _time_claims(self, claim: Callable[[], list[Any]], samples: int) -> dict[str, Any]:
        times: list[float] = []
        sizes: list[int] = []
        tenants: list[int] = []
        statements: list[int] = []
        for _ in range(samples):
            sent = self._statements_sent()
            started = time.perf_counter()
            jobs = claim()
            times.append(time.perf_counter() - started)
            statements.append(self._statements_sent() - sent - 1)  # minus the SHOW itself
            sizes.append(len(jobs))
            tenants.append(len({job.tenant_id for job in jobs}))
        ordered = sorted(times)
        return {
            "claims": samples,
            "ms_p50": _ms(statistics.median(ordered)),
            "ms_max": _ms(ordered[-1]),
            "ms_per_job_p50": round(
                1000 * statistics.median(t / max(1, n) for t, n in zip(times, sizes, strict=True)), 4
            ),
            "jobs_per_claim_p50": statistics.median(sizes),
            "tenants_per_claim_p50": statistics.median(tenants),
            "statements_per_claim_max": max(statements),
        }

    def _claim_cost(self, cursor, options) -> dict[str, Any]:
        cursor.execute("DELETE FROM jobs")
        cursor.execute("DELETE FROM tenant_limits")
        now = db_now(cursor)
        count, tenants = options["future_jobs"], options["claim_tenants"]
        names = [f"t{n:05d}" for n in range(tenants)]
        self.stdout.write(f"claim cost: inserting {count} future jobs over {tenants} tenants ...")
        future = now + timedelta(days=1)
        insert_jobs(cursor, ((names[n % tenants], n % 10, future) for n in range(count)), url="http://127.0.0.1:9/")
        fair_cursor = TenantCursor()

        def fair() -> list[Any]:
            return claim_fair_share(
                worker_id="bench-claim", limit=CLAIM_LIMIT, lookahead_seconds=1.0, cursor=fair_cursor
            )

        def priority_first() -> list[Any]:
            return claim_priority_first(worker_id="bench-claim", limit=CLAIM_LIMIT, lookahead_seconds=1.0)

        started = time.perf_counter()
        for _ in range(EMPTY_POLL_SAMPLES):
            if fair():
                raise CommandError("the empty poll claimed jobs: the future jobs are not a day away")
        empty_poll_ms = _ms((time.perf_counter() - started) / EMPTY_POLL_SAMPLES)
        self.stdout.write(f"claim cost: empty poll {empty_poll_ms} ms; inserting due jobs ...")
        due = now - timedelta(seconds=1)
        rows = [(names[n % tenants], (n // tenants) * 3 % 10, due) for n in range(3 * tenants)]
        insert_jobs(cursor, rows + [("t-burst", 5, due)] * options["burst"], url="http://127.0.0.1:9/")
        cursor.execute("ANALYZE TABLE jobs")
        cursor.fetchall()
        fair_claims = self._time_claims(fair, options["claim_samples"])
        # The same due set again for the round-1 claim.
        cursor.execute(
            "UPDATE jobs SET status = 'pending', attempt = 0, worker_id = NULL, lease_expires_at = NULL,"
            " started_at = NULL WHERE status = 'running'"
        )
        old_claims = self._time_claims(priority_first, options["claim_samples"])
        connection.close()
        return {
            "future_jobs": count,
            "tenants_with_due_jobs": tenants + 1,
            "due_jobs": 3 * tenants + options["burst"],
            "claim_limit": CLAIM_LIMIT,
            "empty_poll_ms": empty_poll_ms,
            "fair": fair_claims,
            "priority_first": old_claims,
        }

    # -- part 2: a noisy neighbour ------------------------------------------------

    @staticmethod
    def _wait_started(executors: list[Child]) -> None:
        """Until every executor logged its start (a loaded machine takes seconds to import Django)."""
        try:
            for executor in executors:
                executor.wait_for_log("event=start", timeout=120)
        except RuntimeError as exc:
            raise CommandError(f"the executors did not start: {exc}") from exc
        time.sleep(1.5)  # their first claim and poll sleep

    def _noisy_neighbour(self, cursor, options, *, fair: bool, child_env: dict[str, str]) -> dict[str, Any]:
        cursor.execute("DELETE FROM jobs")
        cursor.execute("DELETE FROM tenant_limits")
        out_dir = Path(options["out"]).parent
        mode = "on" if fair else "off"
        receiver = Receiver(out_dir, f"fairness-{mode}")
        executors: list[Child] = []
        try:
            env = {
                **child_env,
                "EGRESS_ALLOWLIST": f"127.0.0.1:{receiver.port}",
            }
            executor_options = ["--concurrency", str(options["concurrency"]), "--idle-seconds", "1", "--grace", "10"]
            executors = start_executors(
                options["executors"],
                options=executor_options,
                env=env,
                log_dir=out_dir,
                name=f"fairness-{mode}-executor",
                worker=f"bench-{mode}",
                command="run_executor" if fair else "bench_run_executor_round1",
            )
            self._wait_started(executors)
            due = whole_second_after(db_now(cursor), options["lead_seconds"])
            self.stdout.write(f"fairness {mode}: tenant-a {options['burst']} jobs, then b..k, due {due}Z ...")
            # Ids are made in tenant-a's order first, so b..k sort last by id (behind the burst in the
            # round-1 claim's order); their 100 rows are written first, so a loaded machine's slow
            # 30,000-row insert cannot leave them out of the claims made a poll before D.
            batches = [(NOISY, options["burst"]), *[(name, options["small_jobs"]) for name in QUIET]]
            ids = {tenant: [new_id().bytes for _ in range(count)] for tenant, count in batches}
            for tenant, _ in [*batches[1:], batches[0]]:
                insert_jobs(cursor, [(tenant, 5, due, job_id) for job_id in ids[tenant]], url=receiver.url)
            tenant_of = {str(uuid.UUID(bytes=job_id)): tenant for tenant, group in ids.items() for job_id in group}
            if db_now(cursor) >= due - timedelta(seconds=1):
                self.stderr.write("warning: the inserts ended less than a poll before the due second")
            deadline = time.monotonic() + options["timeout"]
            while time.monotonic() < deadline:
                # EXISTS stops at the first index entry: a COUNT here read every left job each 0.2 s
                # (5.7 s of the database's CPU in one run, taken from the executors it measures).
                cursor.execute(
                    "SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending', 'running')"
                    " AND next_attempt_at < %s + INTERVAL 1 HOUR)",
                    [due],
                )
                if not cursor.fetchone()[0]:
                    break
                if any(p.exited() for p in executors):
                    raise CommandError(f"an executor exited early; see {out_dir}/fairness-{mode}-executor-*.log")
                time.sleep(0.2)
            cursor.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
            statuses = dict(cursor.fetchall())
            # When b..k were claimed (started_at, the claim's NOW(3)): before D means they were
            # parked for D in the first claims, whatever the HTTP burst then does to their arrival.
            cursor.execute(
                "SELECT MAX(started_at) FROM jobs WHERE tenant_id IN (" + ", ".join(["%s"] * len(QUIET)) + ")", QUIET
            )
            (quiet_claimed,) = cursor.fetchone()
            seen = receiver.report()
        finally:
            stop_all(executors)
            receiver.stop()
        due_ts = due.replace(tzinfo=UTC).timestamp()
        late: dict[str, list[float]] = {}
        # The receiver reports (arrival, Idempotency-Key, X-Scheduled-At, bench task) per call.
        for at, key, _, _ in seen:
            if key in tenant_of:
                late.setdefault(tenant_of[key], []).append(at - due_ts)
        quiet = sorted(value for name in QUIET for value in late.get(name, []))
        noisy = sorted(late.get(NOISY, []))
        keys = [key for _, key, _, _ in seen if key in tenant_of]
        return {
            "fairness": mode,
            "due_at": due.isoformat() + "Z",
            "tenants_b_to_k_lateness_seconds": {
                "p50": round(statistics.median(quiet), 3),
                "max": round(quiet[-1], 3),
                "min": round(quiet[0], 3),
            }
            if quiet
            else None,
            "tenants_b_to_k_last_claimed_seconds_after_due": round((quiet_claimed - due).total_seconds(), 3)
            if quiet_claimed
            else None,
            "tenant_a_drain_seconds": round(noisy[-1], 3) if noisy else None,
            "tenant_a_lateness_p50_seconds": round(statistics.median(noisy), 3) if noisy else None,
            "statuses": statuses,
            "checks": {
                "all_succeeded": statuses.get("succeeded", 0) == len(tenant_of),
                "each_key_seen_exactly_once": len(keys) == len(set(keys)) == len(tenant_of),
            },
            "load_average_at_end": os.getloadavg(),
        }

    # -- the run ----------------------------------------------------------------

    def handle(self, *args, **options):
        name = options["database"]
        if not name.replace("_", "").isalnum():
            raise CommandError(f"--database: bad name {name!r}")
        modes = [mode.strip() for mode in options["modes"].split(",") if mode.strip()]
        if not modes or any(mode not in {"off", "on"} for mode in modes):
            raise CommandError(f"--modes: a comma-separated list of off and on, got {options['modes']!r}")
        # Django's connection too (the claims timed in part 1 run on it): the bench database.
        use_database(name)
        child_env = {**os.environ, "DATABASE_URL": database_url_for(name)}
        Path(options["out"]).parent.mkdir(parents=True, exist_ok=True)
        conn = connect(name, read_committed=True)
        try:
            cursor = conn.cursor()
            result: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()}
            if not options["skip_claim_cost"]:
                result["claim_cost"] = self._claim_cost(cursor, options)
                self.stdout.write(json.dumps(result["claim_cost"], indent=2))
            runs = {
                mode: self._noisy_neighbour(cursor, options, fair=mode == "on", child_env=child_env)
                for mode in ([] if options["skip_noisy_neighbour"] else modes)
            }
        finally:
            conn.close()
        result["noisy_neighbour"] = runs
        result["goal"] = {
            "tenants_b_to_k_max_lateness_seconds": GOAL_QUIET_LATENESS_SECONDS,
            "tenant_a_drain_slowdown_at_most": GOAL_NOISY_SLOWDOWN,
        }
        on, off = runs.get("on"), runs.get("off")
        if on and on["tenants_b_to_k_lateness_seconds"]:
            result["goal_quiet_met"] = on["tenants_b_to_k_lateness_seconds"]["max"] <= GOAL_QUIET_LATENESS_SECONDS
        if on and off and on["tenant_a_drain_seconds"] and off["tenant_a_drain_seconds"]:
            ratio = on["tenant_a_drain_seconds"] / off["tenant_a_drain_seconds"]
            result["tenant_a_drain_on_vs_off"] = round(ratio, 3)
            result["goal_noisy_met"] = ratio <= 1 + GOAL_NOISY_SLOWDOWN
        Path(options["out"]).write_text(json.dumps(result, indent=2) + "\n")
        self.stdout.write(json.dumps(result, indent=2))
        if not all(
            run["checks"]["all_succeeded"] and run["checks"]["each_key_seen_exactly_once"] for run in runs.values()
        ):
            raise CommandError("jobs were lost or duplicated")
