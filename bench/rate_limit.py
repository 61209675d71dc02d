"""A rate limit kept by two executors: N jobs due at one second to an origin limited to R/s.

    DJANGO_SETTINGS_MODULE=tests.settings python -m bench.rate_limit [--jobs 2000] [--per-second 50] [--burst 50]

On its own database (default `jobsched_bench_rate`, created, migrated and emptied
here): a local receiver process (bench.receiver, which records every arrival's
time and Idempotency-Key), `--executors` real `run_executor` processes, a limit of
`--per-second` and `--burst` for tenant `limited` on the receiver's origin, then
`--jobs` jobs of that tenant and `--other-jobs` of tenant `other` (no limit) due at
one whole second. Waits until every job is recorded, then prints and writes to
`--output`: the most arrivals of the limited tenant in any one-second window (the
bound is per_second + burst), each job delivered exactly once, none failed, and the
other tenant's lateness (arrival - its second).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, timedelta
from pathlib import Path


def max_in_window(times: list[float], window: float = 1.0) -> tuple[int, float | None]:
    """The most of `times` inside any closed window of `window` seconds, and where that window starts."""
    ordered = sorted(times)
    best, best_start, start = 0, None, 0
    for end, at in enumerate(ordered):
        while ordered[start] < at - window:
            start += 1
        if end - start + 1 > best:
            best, best_start = end - start + 1, ordered[start]
    return best, best_start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rate_limit", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--other-jobs", type=int, default=100)
    parser.add_argument("--per-second", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=200, help="per executor")
    parser.add_argument("--lead-seconds", type=float, default=4.0, help="from the inserts to the due second")
    parser.add_argument("--database", default="jobsched_bench_rate")
    parser.add_argument("--output", default="docs/bench/rate_limit.json")
    parser.add_argument(
        "--walk-cost",
        action="store_true",
        help="instead: the claim's walk with and without its `paced` column, interleaved, in server CPU per walk",
    )
    options = parser.parse_args(argv)
    if not options.database.replace("_", "").isalnum():
        parser.error("--database: letters, digits and _")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from bench.database import connect, db_now, insert_jobs, use_database, whole_second_after
    from bench.procs import Child, start_executors, stop_all
    from bench.receiver import Receiver
    from database.reachability import database_url_for
    from ratelimits.services import rate_limit_set

    use_database(options.database)
    if options.walk_cost:
        return walk_cost(options)
    conn = connect(options.database, read_committed=True)
    cursor = conn.cursor()
    for table in ("jobs", "rate_limits", "origin_buckets"):
        cursor.execute(f"DELETE FROM {table}")
    log_dir = Path(".bench")
    log_dir.mkdir(exist_ok=True)
    receiver = Receiver(log_dir, "rate-limit")
    origin = f"http://127.0.0.1:{receiver.port}"
    rate_limit_set(tenant_id="limited", origin=origin, per_second=options.per_second, burst=options.burst)
    executors: list[Child] = []
    expected = options.jobs + options.other_jobs
    try:
        env = {**os.environ, "DATABASE_URL": database_url_for(options.database), "EGRESS_ALLOWLIST": origin[7:]}
        executor_options = ["--concurrency", str(options.concurrency), "--idle-seconds", "1", "--grace", "10"]
        executors = start_executors(options.executors, options=executor_options, env=env, log_dir=log_dir)
        for child in executors:  # on a loaded machine their start took 12 s: the burst must find them polling
            child.wait_for_log("executor started", timeout=180)
        time.sleep(1.0)
        due = whole_second_after(db_now(cursor), options.lead_seconds)
        limited = insert_jobs(cursor, [("limited", 5, due)] * options.jobs, url=receiver.url)
        other = insert_jobs(cursor, [("other", 5, due)] * options.other_jobs, url=receiver.url)
        if db_now(cursor) >= due - timedelta(seconds=1):
            print("warning: the inserts ended less than a poll before the due second", file=sys.stderr)
        # At the limit the last one goes (jobs - burst) / per_second after the second; twice that and a minute more.
        timeout = 60 + 2 * max(0.0, options.jobs - options.burst) / options.per_second
        if not receiver.wait_for(expected, timeout=timeout, alive=executors):
            print(f"warning: {receiver.count()} of {expected} calls within {timeout:.0f} s", file=sys.stderr)
        time.sleep(1.5)  # results written, and any duplicate call would have arrived
        seen = receiver.report()
        cursor.execute("SELECT tenant_id, status, attempt, COUNT(*) FROM jobs GROUP BY tenant_id, status, attempt")
        statuses = {
            f"{tenant} {status} attempt {attempt}": count for tenant, status, attempt, count in cursor.fetchall()
        }
        cursor.execute(
            "SELECT granted, first_granted_for, last_granted_for FROM origin_buckets WHERE tenant_id = 'limited'"
        )
        granted, first, last = cursor.fetchone()
    finally:
        stop_all(executors)
        receiver.stop()
        conn.close()

    due_ts = due.replace(tzinfo=UTC).timestamp()
    limited_keys = {str(uuid.UUID(bytes=job_id)) for job_id in limited}
    other_keys = {str(uuid.UUID(bytes=job_id)) for job_id in other}
    limited_at = [at for at, key, _, _ in seen if key in limited_keys]
    other_lateness = sorted(at - due_ts for at, key, _, _ in seen if key in other_keys)
    keys = [key for _, key, _, _ in seen]
    window_max, window_start = max_in_window(limited_at)
    per_second_after_due = Counter(int(at - due_ts) for at in limited_at)
    result = {
        "jobs": options.jobs,
        "other_jobs": options.other_jobs,
        "per_second": options.per_second,
        "burst": options.burst,
        "executors": options.executors,
        "concurrency": options.concurrency,
        "max_arrivals_in_any_1s_window": window_max,
        "bound": options.per_second + options.burst,
        "max_window_starts_after_due_seconds": round(window_start - due_ts, 3) if window_start else None,
        "limited_arrivals_by_whole_second_after_due": [per_second_after_due[n] for n in range(8)],
        "limited_span_seconds": round(max(limited_at) - min(limited_at), 3) if limited_at else None,
        "limited_first_arrival_after_due_seconds": round(min(limited_at) - due_ts, 3) if limited_at else None,
        "other_tenant_lateness_seconds": {
            "p50": round(statistics.median(other_lateness), 3),
            "max": round(other_lateness[-1], 3),
        }
        if other_lateness
        else None,
        "bucket": {
            "granted": granted,
            "granted_for_span_seconds": round((last - first).total_seconds(), 3) if first and last else None,
        },
        "statuses": statuses,
        "checks": {
            "window_within_bound": window_max <= options.per_second + options.burst,
            "each_delivered_exactly_once": len(keys) == len(set(keys)) == expected
            and set(keys) == limited_keys | other_keys,
            "none_failed": set(statuses) == {"limited succeeded attempt 1", "other succeeded attempt 1"},
            "other_tenant_on_its_second": bool(other_lateness) and other_lateness[-1] < 1.0,
        },
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
    }
    Path(options.output).parent.mkdir(parents=True, exist_ok=True)
    Path(options.output).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if all(result["checks"].values()) else 1


def walk_cost(options: argparse.Namespace, *, tenants: int = 100, jobs: int = 10000, rounds: int = 400) -> int:
    """The fair walk as shipped (with the EXISTS on origin_buckets) against the same walk without it.

    What a claim pays for rate limits when no tenant has one: the one column. The server thread's
    CPU (bench.procs.server_thread_clock), the two shapes interleaved so the machine's load falls on
    both alike; `tenants` tenants with `jobs` due jobs in all, no bucket rows.
    """
    from django.db import connection

    from bench.database import db_now, insert_jobs
    from bench.procs import server_thread_clock
    from jobs.queue.claims import _statement

    with connection.cursor() as cursor:
        for table in ("jobs", "rate_limits", "origin_buckets"):
            cursor.execute(f"DELETE FROM {table}")
        now = db_now(cursor)
        insert_jobs(cursor, ((f"t{n % tenants:04d}", 5, now) for n in range(jobs)), url="http://127.0.0.1:9/")
        thread_ns = server_thread_clock(cursor)
        shipped = _statement("fair_walk", [5], bound="")
        without = shipped.replace(
            ", EXISTS (SELECT 1 FROM origin_buckets AS p WHERE p.tenant_id = t.tenant_id) AS paced", ""
        )
        assert without != shipped, "the walk's paced column moved: update this bench"
        params = {"after": "", "until": None, "limit": 1000, "lookahead_seconds": 1.0}
        spent = {"shipped": 0, "without_paced": 0}
        for _ in range(rounds):
            for name, query in (("shipped", shipped), ("without_paced", without)):
                before = thread_ns()
                cursor.execute(query, params)
                assert len(cursor.fetchall()) == tenants
                spent[name] += thread_ns() - before
    result = {
        "tenants": tenants,
        "jobs": jobs,
        "walks_each": rounds,
        "server_us_per_walk": {name: round(ns / rounds / 1000, 1) for name, ns in spent.items()},
        "load_average": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
