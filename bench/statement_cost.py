"""The database server's CPU per job, statement by statement, on the executor's claim and result path.

    DJANGO_SETTINGS_MODULE=tests.settings python -m bench.statement_cost [--jobs 30000] [--claims 250,500]

One process, no HTTP and no other client: `--jobs` pending jobs (one per task)
of `--tenants` tenants are claimed with the shipped `jobs.queue.claim_due` (the
fair claim unless EXECUTOR_FAIR_CLAIM is off) `--claims` at a time, and their
results written with `record_results` `--batch` at a time, until none is left;
once per claim size, the jobs made pending again in between. The CPU is the server thread's own (Linux
/proc/<server pid>/task/<thread id>/schedstat, nanoseconds), read around every
statement, so other clients and the server's background threads do not count:
what `python -m bench.system` reports as the database server's CPU also holds
those, and the contention of two executors. Statements are named by what they
contain (STATEMENT_NAMES). Figures go to stdout and `--output`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

# (name, a text only that statement holds), first match wins: the fair claim's statements are
# sent without their comments (jobs.queue.claims._statement), so names come from their text.
STATEMENT_NAMES = (
    ("result_write", "STRAIGHT_JOIN jobs AS j"),
    ("result_update_tasks", "STRAIGHT_JOIN tasks AS t"),
    ("claim_mark_running", "SET status = 'running'"),
    ("fair_walk", "DISTINCT pending_tenant"),
    ("pacing", "origin_buckets"),
    ("fair_take_first", "(pending_tenant, priority, next_attempt_at, id) IN"),
    ("fair_take", "FOR UPDATE SKIP LOCKED"),
    ("claim_due_priorities", "AS priority"),
    ("result_lock_fenced", "SELECT id, fence, task_id"),
    ("result_lock_tasks", "consecutive_failures, auto_pause_after"),
    ("fair_running_counts", "GROUP BY tenant_id"),
    ("tenant_limits", "tenant_limits"),
    ("dirty_read_next", "SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"),
)


def statement_name(sql: str) -> str:
    return next((name for name, text in STATEMENT_NAMES if text in sql), "other")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.statement_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=30000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--claims", default="250,500", help="claim sizes to compare, comma-separated")
    parser.add_argument("--batch", type=int, default=500, help="results per write (the executor's batch)")
    parser.add_argument("--database", default="jobsched_statement_cost")
    parser.add_argument("--output", default=".bench/statement_cost.json")
    options = parser.parse_args(argv)
    try:
        claims = [int(size) for size in options.claims.split(",")]
    except ValueError:
        parser.error("--claims: comma-separated whole numbers")
    if min(options.jobs, options.tenants, options.batch, *claims) < 1:
        parser.error("--jobs, --tenants, --batch and every claim size must be positive")
    if not options.database.replace("_", "").isalnum():
        parser.error("--database: letters, digits and _")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.db import connection

    from bench.database import use_database
    from bench.procs import NoServerThread, server_thread_clock

    use_database(options.database)
    try:
        with connection.cursor() as cursor:
            thread_ns = server_thread_clock(cursor)
    except NoServerThread as exc:
        print(exc, file=sys.stderr)
        return 2

    _fill(connection, jobs=options.jobs, tenants=options.tenants)
    runs = {}
    for size in claims:
        runs[str(size)] = _run(connection, thread_ns, claim=size, batch=options.batch, jobs=options.jobs)
        print(json.dumps({"claim": size, **runs[str(size)]}), flush=True)
    report = {
        "machine": {"cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
        "jobs": options.jobs,
        "tenants": options.tenants,
        "batch": options.batch,
        "by_claim_size": runs,
    }
    Path(options.output).parent.mkdir(parents=True, exist_ok=True)
    Path(options.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


def _fill(connection, *, jobs: int, tenants: int) -> None:
    """`jobs` tasks (one job each, so the task health write has rows to update), round-robin over tenants."""
    from bench.database import insert_tasks

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM jobs")
        cursor.execute("DELETE FROM tasks")
        insert_tasks(
            cursor,
            (
                (f"bench-tenant-{n % tenants:04d}", f"bench task {n}", "http://127.0.0.1:9/", "{}", "", "* * * * *",
                 "UTC", "2100-01-01 00:00:00")
                for n in range(jobs)
            ),
        )  # fmt: skip
        cursor.execute(
            "INSERT INTO jobs (id, task_id, tenant_id, scheduled_at, next_attempt_at, status, priority, attempt,"
            " max_attempts, timeout_seconds, backoff_base_seconds, request_method, request_url, request_headers,"
            " request_body, updated_at)"
            " SELECT UNHEX(REPLACE(UUID(), '-', '')), id, tenant_id, NOW(6), NOW(6), 'pending', priority, 0,"
            " max_attempts, timeout_seconds, backoff_base_seconds, http_method, http_url, http_headers, http_body,"
            " NOW(6) FROM tasks"
        )


def _run(connection, thread_ns, *, claim: int, batch: int, jobs: int) -> dict:
    from jobs.fairness import TenantCursor
    from jobs.queue import JobResult, Outcome, claim_due, record_results

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE jobs SET status = 'pending', attempt = 0, worker_id = NULL, next_attempt_at = NOW(3),"
            " lease_expires_at = NULL, started_at = NULL, finished_at = NULL, attempts = NULL"
        )
        cursor.execute("UPDATE tasks SET consecutive_failures = 0")
    time.sleep(5)  # let purge remove the old index entries, as between two bursts
    spent: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def measured(execute, sql, params, many, context):
        started = thread_ns()
        try:
            return execute(sql, params, many, context)
        finally:
            entry = spent[statement_name(sql)]
            entry[0] += thread_ns() - started
            entry[1] += 1

    cursor_position, held, written = TenantCursor(), [], 0
    started = thread_ns()
    with connection.execute_wrapper(measured):
        while True:
            claimed = claim_due(worker_id="bench", limit=claim, lookahead_seconds=1.0, cursor=cursor_position)
            held += claimed
            while len(held) >= batch or (held and not claimed):
                done, held = held[:batch], held[batch:]
                results = [
                    JobResult(job.id, job.fence, job.attempt, Outcome.SUCCEEDED, 200, None, "ok", None, 5)
                    for job in done
                ]
                written += len(record_results(worker_id="bench", results=results).written)
            if not claimed and not held:
                break
    total = thread_ns() - started
    if written != jobs:
        raise SystemExit(f"wrote {written} results for {jobs} jobs")
    return {
        "server_us_per_job": round(total / jobs / 1000, 1),
        "statements": {
            name: {"count": count, "us_per_job": round(ns / jobs / 1000, 2)}
            for name, (ns, count) in sorted(spent.items(), key=lambda item: -item[1][0])
        },
    }


if __name__ == "__main__":
    sys.exit(main())
