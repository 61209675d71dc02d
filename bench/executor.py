"""`manage.py bench_executor`: N jobs due at the same second, fired by real executor processes.

On a dedicated database (default `jobsched_bench_exec`, created and migrated
here, emptied each run): inserts `--future-jobs` pending jobs due tomorrow
(spread over the ten priorities), measures the claim's empty poll against them,
then starts a local receiver process and `--executors` `run_executor`
processes, inserts `--jobs` jobs due at one whole second a few seconds ahead,
and waits until every one is recorded. Prints and writes to
`.bench/executor.json`: jobs/s end to end, lateness p50/p95/p99/max (arrival at
the receiver - scheduled second), the executors' CPU time per fired job, and
the checks (every job succeeded, every Idempotency-Key seen exactly once).
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

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from bench.database import connect, db_now, insert_jobs, use_database, whole_second_after
from bench.figures import rank_percentile
from bench.procs import Child, cpu_seconds, database_server_pid, start_executors, stop_all
from bench.receiver import Receiver
from database.reachability import database_url_for
from jobs import queue

CLAIM_SAMPLES = 200


class Command(BaseCommand):
    help = "Benchmark the executor: N jobs due at one second, real executors, a local receiver."

    def add_arguments(self, parser):
        parser.add_argument("--jobs", type=int, default=30000)
        parser.add_argument("--executors", type=int, default=2)
        parser.add_argument("--concurrency", type=int, default=500, help="per executor")
        parser.add_argument("--future-jobs", type=int, default=100000, help="pending jobs due tomorrow")
        parser.add_argument("--database", default="jobsched_bench_exec")
        parser.add_argument("--lead-seconds", type=float, default=5.0, help="from the inserts to the due second")
        parser.add_argument("--timeout", type=float, default=120.0)
        parser.add_argument("--out", default=".bench/executor.json")

    # -- the claim's empty poll --------------------------------------------------

    def _time_queries(self, cursor) -> dict[str, float]:
        """Mean ms per empty poll with only future jobs: the claim as shipped vs the single ORDER BY.

        The claim is `jobs.queue.claim_due` itself, on Django's connection to the bench
        database: an empty poll is its per-priority probe, in autocommit as the executor runs it.
        """

        def mean_ms(poll: Callable[[], object]) -> float:
            started = time.perf_counter()
            for _ in range(CLAIM_SAMPLES):
                poll()
            return round(1000 * (time.perf_counter() - started) / CLAIM_SAMPLES, 3)

        def shipped() -> None:
            if queue.claim_due(worker_id="bench-probe", limit=500, lookahead_seconds=1.0):
                raise CommandError("the empty poll claimed jobs: the future jobs are not a day away")

        def single_order_by() -> None:
            # The rejected shape, kept only as the baseline this figure is compared with.
            cursor.execute("BEGIN")
            cursor.execute(
                "SELECT id FROM jobs WHERE status = 'pending' AND next_attempt_at <= NOW(3) + INTERVAL %s SECOND"
                " ORDER BY priority, next_attempt_at LIMIT %s FOR UPDATE SKIP LOCKED",
                [1.0, 500],
            )
            cursor.fetchall()
            cursor.execute("COMMIT")

        try:
            return {
                "empty_poll_ms_per_priority_probe": mean_ms(shipped),
                "empty_poll_ms_single_order_by": mean_ms(single_order_by),
            }
        finally:
            connection.close()

    # -- the run ----------------------------------------------------------------

    def handle(self, *args, **options):
        name = options["database"]
        if not name.replace("_", "").isalnum():
            raise CommandError(f"--database: bad name {name!r}")
        # Django's connection too (the claim under test runs on it): the bench database.
        use_database(name)
        child_env = {**os.environ, "DATABASE_URL": database_url_for(name)}
        conn = connect(name, read_committed=True)
        cursor = conn.cursor()
        cursor.execute("DELETE FROM jobs")
        future = db_now(cursor) + timedelta(days=1)

        self.stdout.write(f"inserting {options['future_jobs']} future jobs ...")
        rows = (("bench", n % 10, future) for n in range(options["future_jobs"]))
        insert_jobs(cursor, rows, url="http://127.0.0.1:9/")
        claim_costs = self._time_queries(cursor)
        self.stdout.write(f"claim, empty poll with {options['future_jobs']} future jobs: {claim_costs}")

        out_dir = Path(options["out"]).parent
        out_dir.mkdir(parents=True, exist_ok=True)
        receiver = Receiver(out_dir, "executor")
        executors: list[Child] = []
        try:
            env = {**child_env, "EGRESS_ALLOWLIST": f"127.0.0.1:{receiver.port}"}
            executor_options = ["--concurrency", str(options["concurrency"]), "--idle-seconds", "1", "--grace", "10"]
            executors = start_executors(options["executors"], options=executor_options, env=env, log_dir=out_dir)
            time.sleep(3)  # let them import Django and start polling
            due = whole_second_after(db_now(cursor), options["lead_seconds"])
            self.stdout.write(f"inserting {options['jobs']} jobs due at {due.isoformat()}Z ...")
            ids = insert_jobs(cursor, [("bench", 5, due)] * options["jobs"], url=receiver.url)
            if db_now(cursor) >= due - timedelta(seconds=1):
                self.stderr.write("warning: the inserts ended less than a poll before the due second")
            cpu_before = {p.pid: cpu_seconds(p.pid) for p in executors}
            server_pid = database_server_pid(cursor)
            others_before = {"receiver": cpu_seconds(receiver.child.pid), "database": cpu_seconds(server_pid)}
            wall_before = time.monotonic()

            deadline = time.monotonic() + options["timeout"]
            while time.monotonic() < deadline:
                # Index range reads only (the archiver's and the claim's indexes): a scan here would steal the
                # database's CPU from the executors. The future jobs are a day away.
                # EXISTS, not COUNT: each poll stops at the first entry instead of reading every left job.
                cursor.execute(
                    "SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'running')"
                    " OR EXISTS (SELECT 1 FROM jobs WHERE pending_priority = 5"
                    " AND next_attempt_at < %s + INTERVAL 1 HOUR)",
                    [due],
                )
                if not cursor.fetchone()[0]:
                    break
                if any(p.exited() for p in executors):
                    raise CommandError("an executor exited early; see .bench/executor-*.log")
                time.sleep(0.2)
            executor_cpu = sum(cpu_seconds(p.pid) - cpu_before[p.pid] for p in executors)
            others = {
                "receiver_cpu_seconds": round(cpu_seconds(receiver.child.pid) - others_before["receiver"], 3),
                # The whole server, including other clients of a shared machine.
                "database_server_cpu_seconds": round(cpu_seconds(server_pid) - others_before["database"], 3),
                "wall_seconds_from_inserts": round(time.monotonic() - wall_before, 3),
            }
            cursor.execute(
                "SELECT status, COUNT(*), MAX(finished_at) FROM jobs WHERE scheduled_at = %s GROUP BY status", [due]
            )
            by_status = {status: (count, finished) for status, count, finished in cursor.fetchall()}
            seen = receiver.report()
        finally:
            stop_all(executors)
            receiver.stop()
            conn.close()

        self._report(options, due, ids, by_status, seen, executor_cpu, claim_costs, others)

    def _report(self, options, due, ids, by_status, seen, executor_cpu, claim_costs, others) -> None:
        due_ts = due.replace(tzinfo=UTC).timestamp()
        expected = {str(uuid.UUID(bytes=job_id)) for job_id in ids}
        keys = [key for _, key, _, _ in seen if key in expected]
        lateness = sorted(at - due_ts for at, key, _, _ in seen if key in expected)
        succeeded, last_finished = by_status.get("succeeded", (0, None))
        all_recorded = (last_finished.replace(tzinfo=UTC).timestamp() - due_ts) if last_finished else None
        fired_span = lateness[-1] if lateness else None
        result = {
            "jobs": options["jobs"],
            "executors": options["executors"],
            "concurrency": options["concurrency"],
            "http_engine": "httptools",
            "future_jobs": options["future_jobs"],
            "due_at": due.isoformat() + "Z",
            "jobs_per_second_end_to_end": round(options["jobs"] / all_recorded, 1) if all_recorded else None,
            "all_fired_within_seconds": round(fired_span, 3) if fired_span is not None else None,
            "all_recorded_within_seconds": round(all_recorded, 3) if all_recorded is not None else None,
            "lateness_seconds": {
                "p50": round(statistics.median(lateness), 3),
                "p95": round(rank_percentile(lateness, 0.95), 3),
                "p99": round(rank_percentile(lateness, 0.99), 3),
                "max": round(lateness[-1], 3),
                "min": round(lateness[0], 3),
            }
            if lateness
            else None,
            "executor_cpu_seconds": round(executor_cpu, 3),
            "executor_cpu_ms_per_fired_job": round(1000 * executor_cpu / max(1, len(keys)), 3),
            "claim": claim_costs,
            "other_cpu": others,
            "statuses": {status: count for status, (count, _) in by_status.items()},
            "checks": {
                "all_succeeded": succeeded == options["jobs"],
                "each_key_seen_exactly_once": len(keys) == len(set(keys)) == len(expected),
                "keys_seen": len(keys),
                "duplicate_keys": len(keys) - len(set(keys)),
                "lost_keys": len(expected - set(keys)),
            },
            "target": {"jobs_per_second": 3000, "all_fired_within_seconds": 10, "lateness_p50_below_seconds": 4},
            "cpus": os.cpu_count(),
            "load_average_at_end": os.getloadavg(),
        }
        result["target_met"] = bool(
            result["checks"]["all_succeeded"]
            and result["checks"]["each_key_seen_exactly_once"]
            and fired_span is not None
            and fired_span <= 10
            and (result["jobs_per_second_end_to_end"] or 0) >= 3000
            and result["lateness_seconds"]["p50"] < 4
        )
        Path(options["out"]).write_text(json.dumps(result, indent=2) + "\n")
        self.stdout.write(json.dumps(result, indent=2))
        if not (result["checks"]["all_succeeded"] and result["checks"]["each_key_seen_exactly_once"]):
            raise CommandError("jobs were lost or duplicated")
