"""The executor's empty poll (nothing due) against 0, 100,000 and 1,000,000 future jobs.

    python -m bench.empty_poll [--future-jobs 0,100000,1000000] [--polls 200]

On its own database (default `jobsched_sysbench_poll`, created and migrated
here, emptied first), it grows the jobs table to each count in turn with
pending jobs due tomorrow (spread over the ten priorities) and times the real
`jobs.queue.claim_due` with nothing due (mean, p50, p99 over `--polls` polls), and
for comparison the seed's single `ORDER BY priority, next_attempt_at ... FOR
UPDATE SKIP LOCKED` (fewer polls: it walks every future job). Writes
`<out-dir>/empty_poll.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parent.parent
INSERT_BATCH = 2000
SINGLE_QUERY = (
    "SELECT id FROM jobs WHERE status = 'pending' AND next_attempt_at <= NOW(3) + INTERVAL 1 SECOND"
    " ORDER BY priority, next_attempt_at LIMIT 500 FOR UPDATE SKIP LOCKED"
)


def _use_database(name: str) -> None:
    import MySQLdb
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    db = settings.DATABASES["default"]
    server = MySQLdb.connect(
        host=db["HOST"] or "127.0.0.1", port=int(db["PORT"] or 3306), user=db["USER"], password=db["PASSWORD"] or ""
    )
    with server.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    server.close()
    connection.close()
    db["NAME"] = name
    connection.settings_dict["NAME"] = name
    call_command("migrate", verbosity=0, interactive=False)


def _insert_future_jobs(count: int) -> None:
    from django.db import connection

    from jobsched_project.ids import new_id

    columns = (
        "id, tenant_id, task_id, scheduled_at, status, priority, attempt, max_attempts, next_attempt_at,"
        " timeout_seconds, backoff_base_seconds, request_method, request_url, request_headers, request_body,"
        " updated_at"
    )
    row = "(%s, %s, %s, %s, 'pending', %s, 0, 3, %s, 10, 10, 'POST', 'http://127.0.0.1:9/', '{}', '', NOW(6))"
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOW(3)")
        (now,) = cursor.fetchone()
        for start in range(0, count, INSERT_BATCH):
            size = min(INSERT_BATCH, count - start)
            params: list[Any] = []
            for n in range(start, start + size):
                due = now + timedelta(days=1, milliseconds=n)
                params += [new_id().bytes, f"bench-tenant-{n % 100}", uuid.uuid4().bytes, due, n % 10, due]
            cursor.execute(f"INSERT INTO jobs ({columns}) VALUES " + ", ".join([row] * size), params)


def _timed_ms(fn, polls: int) -> dict[str, float]:
    samples = []
    for _ in range(polls):
        started = time.perf_counter()
        fn()
        samples.append(1000 * (time.perf_counter() - started))
    samples.sort()
    return {
        "polls": polls,
        "mean_ms": round(statistics.fmean(samples), 3),
        "p50_ms": round(samples[len(samples) // 2], 3),
        "p99_ms": round(samples[min(len(samples) - 1, int(len(samples) * 0.99))], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--future-jobs", default="0,100000,1000000", help="comma-separated, ascending")
    parser.add_argument("--polls", type=int, default=200)
    parser.add_argument("--single-query-polls", type=int, default=10)
    parser.add_argument("--database", default="jobsched_sysbench_poll")
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    args = parser.parse_args(argv)
    counts = sorted(int(value) for value in args.future_jobs.split(",") if value.strip())
    if not counts or counts[0] < 0 or args.polls < 1 or not args.database.replace("_", "").isalnum():
        parser.error("--future-jobs must be non-negative counts, --polls positive, --database a plain name")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.db import connection, transaction

    from jobs.queue import claim_due

    _use_database(args.database)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM jobs")

    def single_query() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(SINGLE_QUERY)
            cursor.fetchall()

    results = []
    have = 0
    for count in counts:
        started = time.monotonic()
        _insert_future_jobs(count - have)
        have = count
        print(f"[empty_poll] {count} future jobs (inserted in {time.monotonic() - started:.1f} s)", flush=True)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE TABLE jobs")
            cursor.fetchall()
        claimed = claim_due(worker_id="bench-empty-poll", limit=500, lookahead_seconds=1.0)
        assert claimed == [], "nothing may be due in this bench"
        figures = {
            "future_jobs": count,
            "claim_due": _timed_ms(
                lambda: claim_due(worker_id="bench-empty-poll", limit=500, lookahead_seconds=1.0), args.polls
            ),
            "single_order_by": _timed_ms(single_query, args.single_query_polls),
        }
        print(f"[empty_poll] {json.dumps(figures)}", flush=True)
        results.append(figures)
    out = {"load_average": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(), "results": results}
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.out_dir) / "empty_poll.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
