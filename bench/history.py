"""Benchmark the history stores: archiver throughput and history page latency, SQL vs Cassandra.

    DJANGO_SETTINGS_MODULE=tests.settings CASSANDRA_HOSTS=127.0.0.1 python -m bench.history

(`make bench-history` starts the local Cassandra node and runs this.) On a dedicated
MySQL database (`--database`, created and migrated if missing, emptied per run) and a
dedicated keyspace (`--keyspace`, recreated, and dropped at the end):

1. archiver: `--jobs` succeeded jobs finished two hours ago are moved by the real
   `Archiver` (in this process, batches of `--batch-size`, the shipped default)
   until none is left; jobs/s = jobs / wall seconds, per store.
2. reads: one task with `--history-jobs` archived jobs spread evenly over the last
   `--days` days (written with the store's own write_many), then `--samples` pages of
   `--limit` read through the store (`page`) and through the API's use case
   (`task_history`, which also reads MySQL and merges): the first page, and pages
   from a random record's position (deep pages across months). p50/p99 in ms.
   The TTL is set to the span plus a week so every row stays listed.

Figures go to stdout and to `--output` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _latency(samples_ms: list[float]) -> dict:
    return {
        "p50_ms": round(_percentile(samples_ms, 0.50), 2),
        "p99_ms": round(_percentile(samples_ms, 0.99), 2),
        "mean_ms": round(statistics.fmean(samples_ms), 2),
        "samples": len(samples_ms),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.history", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=30_000, help="finished jobs the archiver moves, per store")
    parser.add_argument("--history-jobs", type=int, default=100_000, help="archived jobs of the read task")
    parser.add_argument("--days", type=int, default=90, help="the span of the read task's history")
    parser.add_argument("--limit", type=int, default=50, help="page size")
    parser.add_argument("--samples", type=int, default=300, help="page reads per kind and store")
    parser.add_argument("--batch-size", type=int, default=None, help="archiver batch (default: as shipped)")
    parser.add_argument("--stores", default="sql,cassandra", help="comma-separated: sql, cassandra")
    parser.add_argument("--database", default="jobsched_bench_history")
    parser.add_argument("--keyspace", default="jobsched_bench")
    parser.add_argument("--output", default=".bench/history.json")
    options = parser.parse_args(argv)
    stores = [name for name in options.stores.split(",") if name]
    if not set(stores) <= {"sql", "cassandra"} or min(options.jobs, options.history_jobs, options.samples) < 1:
        parser.error("--stores takes sql and/or cassandra; counts must be positive")

    ttl_seconds = (options.days + 7) * 86400
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ["HISTORY_TTL_SECONDS"] = str(ttl_seconds)
    import django

    django.setup()
    from bench.history_runs import prepare, run_archiver, run_reads

    context = prepare(stores=stores, database=options.database, keyspace=options.keyspace, ttl_seconds=ttl_seconds)
    report: dict = {
        "machine": {"cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
        "servers": context.versions,
        "settings": {key: getattr(options, key) for key in ("jobs", "history_jobs", "days", "limit", "samples")},
        "archiver": {},
        "reads": {},
    }
    random.seed(7)
    for name in stores:
        print(f"[{name}] archiving {options.jobs} jobs ...", flush=True)
        report["archiver"][name] = run_archiver(context, name, jobs=options.jobs, batch_size=options.batch_size)
        print(f"[{name}] archiver: {json.dumps(report['archiver'][name])}", flush=True)
    for name in stores:
        print(f"[{name}] writing {options.history_jobs} archived jobs over {options.days} days ...", flush=True)
        reads = run_reads(
            context,
            name,
            history_jobs=options.history_jobs,
            days=options.days,
            limit=options.limit,
            samples=options.samples,
        )
        report["reads"][name] = {key: value if key.endswith("_s") else _latency(value) for key, value in reads.items()}
        print(f"[{name}] reads: {json.dumps(report['reads'][name])}", flush=True)
    report["finished_at"] = datetime.now(UTC).isoformat()
    output = Path(options.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {output}")
    if context.cassandra_session is not None:
        # The local node is shared with the test suite: do not leave 130,000 rows in its memtables.
        context.cassandra_session.execute(f"DROP KEYSPACE IF EXISTS {options.keyspace}")
        context.cassandra_session.cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
