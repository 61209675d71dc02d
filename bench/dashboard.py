"""Benchmark the queue dashboard's reads on a million jobs: EXPLAIN and timings.

    DJANGO_SETTINGS_MODULE=tests.settings python -m bench.dashboard --jobs 1000000

(`make bench-dashboard`.) On a throwaway database (`--database`, created and
migrated if missing; the jobs table is emptied and refilled unless `--reuse`), fill
`--jobs` jobs in one shape a busy hour leaves behind: 90 % succeeded over the last
hour, 2 % dead over the last 30 hours (50 tenants), 7.8 % pending (half due now,
half in the next hour) and 0.2 % running under 8 workers. Then, for each statement
of jobs/dashboard.py: its EXPLAIN (the index each table reads), and `--samples`
timed runs (p50/max ms); and the whole page's reads (`read_dashboard`). Figures go
to stdout and to `--output` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

FILL_CHUNK = 100_000

# One INSERT ... SELECT per chunk over MariaDB's SEQUENCE engine (seq_1_to_N): no rows
# cross the wire. m = seq mod 1000 picks the status; times are relative to NOW(3).
FILL = """
INSERT INTO jobs (id, tenant_id, task_id, scheduled_at, status, priority, attempt, max_attempts,
                  next_attempt_at, timeout_seconds, backoff_base_seconds, worker_id, lease_expires_at,
                  started_at, finished_at, http_status, error, response_body,
                  request_method, request_url, request_headers, request_body, secret_ref, updated_at)
SELECT UNHEX(CONCAT(LPAD(HEX(s.seq), 16, '0'), '7000800000000000')),
       CONCAT('tenant-', s.seq MOD 50),
       UNHEX(CONCAT(LPAD(HEX(s.seq MOD 1000), 16, '0'), '7000800000000001')),
       TIMESTAMP('2026-01-01') + INTERVAL s.seq * 1000 MICROSECOND,
       s.status, s.seq MOD 10, 1, 3,
       CASE s.status
           WHEN 'succeeded' THEN s.finished - INTERVAL (1000 + s.seq MOD 2000) * 1000 MICROSECOND
           WHEN 'dead' THEN s.finished - INTERVAL 1 SECOND
           WHEN 'pending' THEN IF(s.m < 959, NOW(3) - INTERVAL (s.seq MOD 300) SECOND,
                                  NOW(3) + INTERVAL (s.seq MOD 3600) SECOND)
           ELSE NOW(3) - INTERVAL 5 SECOND
       END,
       30, 10,
       IF(s.status = 'running', CONCAT('executor-', s.seq MOD 8), NULL),
       IF(s.status = 'running', NOW(3) + INTERVAL (s.seq MOD 120) - 10 SECOND, NULL),
       IF(s.status IN ('succeeded', 'dead', 'running'),
          COALESCE(s.finished, NOW(3)) - INTERVAL 500000 MICROSECOND, NULL),
       s.finished,
       CASE s.status WHEN 'succeeded' THEN 200 WHEN 'dead' THEN 503 END,
       IF(s.status = 'dead', 'HTTP 503 from the endpoint', NULL),
       NULL, 'POST', 'https://example.com/hook', '{}', '', NULL, NOW(3)
FROM (
    SELECT q.seq, q.m,
           CASE WHEN q.m < 900 THEN 'succeeded' WHEN q.m < 920 THEN 'dead'
                WHEN q.m < 998 THEN 'pending' ELSE 'running' END AS status,
           CASE WHEN q.m < 900 THEN NOW(3) - INTERVAL ((q.seq * 7919) MOD 3600000) * 1000 MICROSECOND
                WHEN q.m < 920 THEN NOW(3) - INTERVAL ((q.seq * 7919) MOD 108000) SECOND END AS finished
    FROM (SELECT seq, seq MOD 1000 AS m FROM seq_{first}_to_{last}) AS q
) AS s
"""


def _latency(samples_ms: list[float]) -> dict:
    return {
        "p50_ms": round(statistics.median(samples_ms), 2),
        "max_ms": round(max(samples_ms), 2),
        "samples": len(samples_ms),
    }


def _fill(cursor, jobs: int) -> float:
    started = time.perf_counter()
    cursor.execute("TRUNCATE TABLE jobs")
    for first in range(1, jobs + 1, FILL_CHUNK):
        last = min(first + FILL_CHUNK - 1, jobs)
        cursor.execute(FILL.replace("{first}", str(first)).replace("{last}", str(last)))
        print(f"  filled {last} jobs", flush=True)
    cursor.execute("ANALYZE TABLE jobs")
    cursor.fetchall()
    return time.perf_counter() - started


def _explain(cursor, sql: str, params: list) -> list[dict]:
    cursor.execute("EXPLAIN " + sql, params)
    names = [column[0] for column in cursor.description]
    return [
        {key: value for key, value in zip(names, row, strict=True) if key in ("table", "type", "key", "rows", "Extra")}
        for row in cursor.fetchall()
    ]


def _time(run, samples: int) -> dict:
    from bench.figures import timed_ms

    return _latency(timed_ms(run, samples))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=20, help="timed runs per statement")
    parser.add_argument("--database", default="jobsched_console_bench")
    parser.add_argument("--reuse", action="store_true", help="keep the jobs already in the database")
    parser.add_argument("--output", default=".bench/dashboard.json")
    options = parser.parse_args(argv)
    if options.jobs < 1000 or options.samples < 1 or not options.database.replace("_", "").isalnum():
        parser.error("--jobs at least 1000, --samples at least 1, --database letters, digits and _")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.db import connection

    from bench.database import use_database
    from jobs.queue import dashboard
    from jobs.queue.statements import STATEMENTS

    use_database(options.database)
    report: dict = {
        "machine": {"cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
        "database": options.database,
        "jobs": options.jobs,
        "statements": {},
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        report["server"] = cursor.fetchone()[0]
        if not options.reuse:
            print(f"filling {options.jobs} jobs ...", flush=True)
            report["fill_s"] = round(_fill(cursor, options.jobs), 1)
        cursor.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        report["table"] = dict(cursor.fetchall())

        statements = {
            "dashboard_status_counts": (STATEMENTS["dashboard_status_counts"], {"cap": dashboard.COUNT_CAP}),
            "dashboard_due_level (x 10 levels)": (dashboard.DUE_STATEMENT, {"cap": dashboard.DUE_LEVEL_CAP}),
            "dashboard_leases": (
                STATEMENTS["dashboard_leases"],
                {"scan_rows": dashboard.LEASE_SCAN_ROWS, "workers": dashboard.WORKERS_SHOWN},
            ),
            "dashboard_finished_minute (15 min x 2 statuses)": (
                dashboard.finished_statement(dashboard.MINUTES),
                {"cap": dashboard.FINISHED_CAP},
            ),
            "dashboard_lateness_minute (15 min x 2 statuses)": (
                dashboard.lateness_statement(dashboard.MINUTES),
                {"sample": dashboard.LATENESS_SAMPLE},
            ),
            "dashboard_dead_by_tenant_hour": (
                STATEMENTS["dashboard_dead_by_tenant_hour"],
                {"hours": dashboard.DEAD_HOURS, "scan_rows": dashboard.DEAD_SCAN_ROWS},
            ),
        }
        for name, (statement, values) in statements.items():
            sql, params = statement.bind(values)
            plan = _explain(cursor, sql, params)

            def run(sql=sql, params=params):
                cursor.execute(sql, params)
                cursor.fetchall()

            timing = _time(run, options.samples)
            indexes = sorted({row["key"] for row in plan if row["key"]})
            report["statements"][name] = {**timing, "indexes": indexes, "explain": plan}
            print(f"{name}: p50 {timing['p50_ms']} ms, max {timing['max_ms']} ms, indexes {indexes}", flush=True)
    report["read_dashboard"] = _time(dashboard.read_dashboard, options.samples)
    print(f"read_dashboard (the whole page): {json.dumps(report['read_dashboard'])}")
    report["finished_at"] = datetime.now(UTC).isoformat()
    output = Path(options.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"written to {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
