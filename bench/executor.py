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
import math
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import MySQLdb
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from jobs import queue
from jobsched_project.database import database_url_for
from jobsched_project.ids import new_id
from workers.executor.http import ENGINES

INSERT_BATCH = 2000
CLAIM_SAMPLES = 200
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process from /proc (Linux); 0 when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _database_server_pid() -> int | None:
    """The local MariaDB/MySQL server's pid, to report its CPU share (None if not local)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "comm").read_text().strip() in {"mariadbd", "mysqld"}:
                    return int(proc.name)
            except OSError:
                continue
    return None


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
        parser.add_argument(
            "--http-engine",
            choices=ENGINES,
            default="aiohttp",
            help="the executors' HTTP engine (httpx on httpx-aiohttp measured 0.485 ms CPU per job, aiohttp 0.211)",
        )

    # -- database ---------------------------------------------------------------

    def _connect(self, name: str):
        db = settings.DATABASES["default"]
        conn = MySQLdb.connect(
            host=db["HOST"] or "127.0.0.1",
            port=int(db["PORT"] or 3306),
            user=db["USER"],
            password=db["PASSWORD"] or "",
            database=name,
            charset="utf8mb4",
            binary_prefix=True,
            autocommit=True,
            init_command="SET time_zone='+00:00', tx_isolation='READ-COMMITTED'",
        )
        return conn

    def _insert_jobs(self, cursor, count: int, *, due: datetime, priorities: int, url: str) -> list[bytes]:
        ids: list[bytes] = []
        columns = (
            "id, tenant_id, task_id, scheduled_at, status, priority, attempt, max_attempts, next_attempt_at,"
            " timeout_seconds, backoff_base_seconds, request_method, request_url, request_headers, request_body,"
            " updated_at"
        )
        row = "(%s, 'bench', %s, %s, 'pending', %s, 0, 3, %s, 10, 10, 'POST', %s, '{}', '', NOW(6))"
        for start in range(0, count, INSERT_BATCH):
            size = min(INSERT_BATCH, count - start)
            params: list[object] = []
            for n in range(size):
                job_id = new_id().bytes
                ids.append(job_id)
                params += [job_id, uuid.uuid4().bytes, due, (start + n) % priorities if priorities > 1 else 5, due, url]
            cursor.execute(f"INSERT INTO jobs ({columns}) VALUES " + ", ".join([row] * size), params)
        return ids

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
        url = database_url_for(name)
        child_env = {**os.environ, "DATABASE_URL": url}
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        for command in (["ensure_database"], ["migrate", "--noinput", "-v0"]):
            subprocess.run([*manage, *command], env=child_env, check=True)
        # Django's connection too (the claim under test runs on it): the bench database.
        connection.close()
        settings.DATABASES["default"]["NAME"] = connection.settings_dict["NAME"] = name
        conn = self._connect(name)
        cursor = conn.cursor()
        cursor.execute("DELETE FROM jobs")
        cursor.execute("SELECT NOW(3)")
        (db_now,) = cursor.fetchone()

        self.stdout.write(f"inserting {options['future_jobs']} future jobs ...")
        self._insert_jobs(
            cursor, options["future_jobs"], due=db_now + timedelta(days=1), priorities=10, url="http://127.0.0.1:9/"
        )
        claim_costs = self._time_queries(cursor)
        self.stdout.write(f"claim, empty poll with {options['future_jobs']} future jobs: {claim_costs}")

        out_dir = Path(options["out"]).parent
        out_dir.mkdir(parents=True, exist_ok=True)
        receiver = subprocess.Popen(
            [sys.executable, "-m", "bench.receiver", "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=settings.BASE_DIR,
        )
        executors: list[subprocess.Popen] = []
        try:
            port = int(receiver.stdout.readline())
            target = f"http://127.0.0.1:{port}/hook"
            env = {**child_env, "EGRESS_ALLOWLIST": f"127.0.0.1:{port}"}
            for n in range(options["executors"]):
                # The child keeps its own copy of the descriptor; ours closes at once.
                with open(out_dir / f"executor-{n}.log", "w") as log:
                    executors.append(
                        subprocess.Popen(
                            [
                                *manage,
                                "run_executor",
                                "--concurrency",
                                str(options["concurrency"]),
                                "--idle-seconds",
                                "1",
                                "--grace",
                                "10",
                                "--worker-id",
                                f"bench-{n}",
                                "--http-engine",
                                options["http_engine"],
                            ],
                            env=env,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                        )
                    )
            time.sleep(3)  # let them import Django and start polling
            cursor.execute("SELECT NOW(3)")
            (db_now,) = cursor.fetchone()
            due = datetime.fromtimestamp(
                math.ceil(db_now.replace(tzinfo=UTC).timestamp() + options["lead_seconds"]), UTC
            ).replace(tzinfo=None)
            self.stdout.write(f"inserting {options['jobs']} jobs due at {due.isoformat()}Z ...")
            ids = self._insert_jobs(cursor, options["jobs"], due=due, priorities=1, url=target)
            cursor.execute("SELECT NOW(3)")
            (inserted_at,) = cursor.fetchone()
            if inserted_at >= due - timedelta(seconds=1):
                self.stderr.write("warning: the inserts ended less than a poll before the due second")
            cpu_before = {p.pid: _cpu_seconds(p.pid) for p in executors}
            server_pid = _database_server_pid()
            others_before = {"receiver": _cpu_seconds(receiver.pid), "database": _cpu_seconds(server_pid or 0)}
            wall_before = time.monotonic()

            deadline = time.monotonic() + options["timeout"]
            while time.monotonic() < deadline:
                # Index range reads only (claim and reconciler indexes): a scan here would steal the
                # database's CPU from the executors. The future jobs are a day away.
                cursor.execute(
                    "SELECT (SELECT COUNT(*) FROM jobs WHERE status = 'running')"
                    " + (SELECT COUNT(*) FROM jobs WHERE status = 'pending' AND priority = 5"
                    " AND next_attempt_at < %s + INTERVAL 1 HOUR)",
                    [due],
                )
                if cursor.fetchone()[0] == 0:
                    break
                if any(p.poll() is not None for p in executors):
                    raise CommandError("an executor exited early; see .bench/executor-*.log")
                time.sleep(0.2)
            cpu_seconds = sum(_cpu_seconds(p.pid) - cpu_before[p.pid] for p in executors)
            others = {
                "receiver_cpu_seconds": round(_cpu_seconds(receiver.pid) - others_before["receiver"], 3),
                # The whole server, including other clients of a shared machine.
                "database_server_cpu_seconds": round(_cpu_seconds(server_pid or 0) - others_before["database"], 3),
                "wall_seconds_from_inserts": round(time.monotonic() - wall_before, 3),
            }
            cursor.execute(
                "SELECT status, COUNT(*), MAX(finished_at) FROM jobs WHERE scheduled_at = %s GROUP BY status", [due]
            )
            by_status = {status: (count, finished) for status, count, finished in cursor.fetchall()}
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/__report", timeout=30) as response:
                seen = json.loads(response.read())
        finally:
            for process in executors:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in executors:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
            receiver.kill()
            receiver.wait()
            conn.close()

        self._report(options, due, ids, by_status, seen, cpu_seconds, claim_costs, others)

    def _report(self, options, due, ids, by_status, seen, cpu_seconds, claim_costs, others) -> None:
        due_ts = due.replace(tzinfo=UTC).timestamp()
        expected = {str(uuid.UUID(bytes=job_id)) for job_id in ids}
        keys = [key for key, _, _ in seen if key in expected]
        lateness = sorted(at - due_ts for key, at, _ in seen if key in expected)
        succeeded, last_finished = by_status.get("succeeded", (0, None))
        all_recorded = (last_finished.replace(tzinfo=UTC).timestamp() - due_ts) if last_finished else None
        fired_span = lateness[-1] if lateness else None
        result = {
            "jobs": options["jobs"],
            "executors": options["executors"],
            "concurrency": options["concurrency"],
            "http_engine": options["http_engine"],
            "future_jobs": options["future_jobs"],
            "due_at": due.isoformat() + "Z",
            "jobs_per_second_end_to_end": round(options["jobs"] / all_recorded, 1) if all_recorded else None,
            "all_fired_within_seconds": round(fired_span, 3) if fired_span is not None else None,
            "all_recorded_within_seconds": round(all_recorded, 3) if all_recorded is not None else None,
            "lateness_seconds": {
                "p50": round(statistics.median(lateness), 3),
                "p95": round(_percentile(lateness, 0.95), 3),
                "p99": round(_percentile(lateness, 0.99), 3),
                "max": round(lateness[-1], 3),
                "min": round(lateness[0], 3),
            }
            if lateness
            else None,
            "executor_cpu_seconds": round(cpu_seconds, 3),
            "executor_cpu_ms_per_fired_job": round(1000 * cpu_seconds / max(1, len(keys)), 3),
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
