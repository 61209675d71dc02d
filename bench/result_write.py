"""Benchmark the executor's fenced result write with and without the attempt log (A/B, one run).

    DJANGO_SETTINGS_MODULE=tests.settings python -m bench.result_write

(`make bench-result-write`.) On a throwaway database (`--database`, created and
migrated if missing, jobs emptied): `--rounds` rounds, each marks `--batch` jobs
running and writes their results through `jobs.queue.record_results` (the lock
and the one UPDATE ... JOIN), alternating between the shipped `result_write` and
the same statement without its `j.attempts = ...` assignment (the statement as it
was before the attempt log), so both run under the same load. Each job already
holds `--log-entries` attempts, so the trim (past 20) is measured too. Figures
(wall ms per batch p50/mean; the CPU of the server thread serving the bench's
connection per result, p50, when the server runs on this machine (it holds on a
busy machine better than wall time); the changes in percent) go to stdout and
`--output`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.result_write", description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=500, help="results per write (the executor's batch)")
    parser.add_argument("--rounds", type=int, default=40, help="writes per variant")
    parser.add_argument("--log-entries", type=int, default=20, help="attempts each job already holds")
    parser.add_argument("--database", default="jobsched_console_bench")
    parser.add_argument("--output", default=".bench/result_write.json")
    options = parser.parse_args(argv)
    if min(options.batch, options.rounds) < 1 or not options.database.replace("_", "").isalnum():
        parser.error("--batch and --rounds at least 1; --database letters, digits and _")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.db import connection
    from django.utils import timezone

    from bench.database import use_database
    from bench.procs import NoServerThread, server_thread_clock
    from domain.ids import new_id
    from jobs.models import Job
    from jobs.queue import JobResult, Outcome, record_results, statements
    from tests.factories import make_task

    use_database(options.database)
    try:
        with connection.cursor() as cursor:
            server_ns = server_thread_clock(cursor)
    except NoServerThread as exc:  # a remote server: wall time only
        print(f"{exc}: the server's CPU is not measured", file=sys.stderr)
        server_ns = None
    shipped = statements.STATEMENTS["result_write"]
    # The statement as before the attempt log: the same text without the attempts assignment.
    before_text = re.sub(r"SET -- The attempt log.*?\),\n    j\.status", "SET j.status", shipped.tail, flags=re.S)
    if before_text == shipped.tail or "attempts" in before_text:
        raise SystemExit("could not derive the statement without the attempt log")
    before = statements.Statement(
        name="result_write_before",
        head=shipped.head,
        tail=before_text,
        head_names=shipped.head_names,
        tail_names=shipped.tail_names,
        marker=shipped.marker,
    )

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE TABLE jobs")
    task = make_task(tenant_id="bench")
    # Earlier attempts as the writers store them (domain.attempt_log), one second apart.
    entries = [[n, 1796130000125 + 1000 * n, 40, "pending", 503, "HTTP 503"] for n in range(options.log_entries)]
    log = json.dumps(entries) if entries else None  # a job's first result finds no log
    ids = [new_id() for _ in range(options.batch)]
    due = task.next_run_at or timezone.now()
    Job.objects.bulk_create(
        Job(
            id=job_id,
            tenant_id="bench",
            task=task,
            scheduled_at=due - timedelta(seconds=n),
            next_attempt_at=due,
            request_method="POST",
            request_url="https://example.com/hook",
            attempts=log,
        )
        for n, job_id in enumerate(ids)
    )
    worker = "bench-worker"
    timings: dict[str, list[float]] = {"before": [], "with_attempt_log": []}
    server_us: dict[str, list[float]] = {"before": [], "with_attempt_log": []}  # per result
    attempt = 0
    for round_number in range(options.rounds * 2):
        variant = "before" if round_number % 2 == 0 else "with_attempt_log"
        # With a full log the attempt is past 20, so the trim runs (a job on its 21st attempt or later).
        attempt += 1
        attempt = max(attempt, 21) if options.log_entries >= 20 else attempt
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE jobs SET status = 'running', worker_id = %s, attempt = %s, fence = %s, attempts = %s,"
                " started_at = NOW(3)",
                [worker, attempt, attempt, log],
            )
        results = [
            JobResult(
                job_id, attempt, attempt, Outcome.RETRY, 503, "HTTP 503", "busy", delay_seconds=10, duration_ms=42
            )
            for job_id in ids
        ]
        statements.STATEMENTS["result_write"] = before if variant == "before" else shipped
        try:
            server_started = server_ns() if server_ns else 0
            started = time.perf_counter()
            report = record_results(worker_id=worker, results=results)
            timings[variant].append((time.perf_counter() - started) * 1000)
            if server_ns:
                server_us[variant].append((server_ns() - server_started) / 1000 / options.batch)
        finally:
            statements.STATEMENTS["result_write"] = shipped
        assert len(report.written) == options.batch
    with connection.cursor() as cursor:
        cursor.execute("SELECT JSON_LENGTH(attempts) FROM jobs LIMIT 1")
        kept = cursor.fetchone()[0]
    summary: dict[str, dict[str, float]] = {
        variant: {"p50_ms": round(statistics.median(ms), 2), "mean_ms": round(statistics.fmean(ms), 2)}
        for variant, ms in timings.items()
    }
    change = summary["with_attempt_log"]["p50_ms"] / summary["before"]["p50_ms"] - 1
    server_change = None
    if server_ns:
        for variant, per_result in server_us.items():
            summary[variant]["server_cpu_us_per_result_p50"] = round(statistics.median(per_result), 2)
        server_change = (
            summary["with_attempt_log"]["server_cpu_us_per_result_p50"]
            / summary["before"]["server_cpu_us_per_result_p50"]
            - 1
        )
    report_out = {
        "machine": {"cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
        "batch": options.batch,
        "rounds": options.rounds,
        "log_entries_before": options.log_entries,
        "log_entries_after_last_write": kept,
        **summary,
        "p50_change_percent": round(change * 100, 1),
        "server_cpu_change_percent": None if server_change is None else round(server_change * 100, 1),
    }
    print(json.dumps(report_out, indent=2))
    output = Path(options.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report_out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
