"""The task list's first page of 50, unfiltered and filtered by labels, read through the API's selector.

    python -m bench.label_list [--tasks 20000] [--samples 200] [--compare]

On its own database (default `jobsched_bench_labels`, created and migrated, emptied per
run) one tenant gets `--tasks` tasks: every task `env=prod` or `env=dev` (half each), one in
a hundred also `team=rare`. Then `--samples` first pages (limit 50) of: the whole list, the
list of `env=prod` (common), of `team=rare` (rare), and of both. p50/p99 in ms go to stdout
and to `--output` as JSON. `--compare` interleaves each filtered page with the ORM semi-join the
selector used before (commit 0580973), round by round, statistics recounted first.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

TENANT = "bench-labels"


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _fill(count: int) -> None:
    from domain.ids import new_id
    from tasks.models import Task, TaskLabel

    TaskLabel.objects.all().delete()
    Task.objects.all().delete()
    for start in range(0, count, 1000):
        tasks, labels = [], []
        for index in range(start, min(count, start + 1000)):
            task_labels = {"env": "prod" if index % 2 else "dev"}
            if index % 100 == 1:
                task_labels["team"] = "rare"
            task = Task(
                id=new_id(),
                tenant_id=TENANT,
                name=f"task {index}",
                http_url="https://example.com/hook",
                cron_expression="*/5 * * * *",
                timezone="UTC",
                labels=task_labels,
            )
            tasks.append(task)
            labels += [TaskLabel(task=task, tenant_id=TENANT, key=k, value=v) for k, v in task_labels.items()]
        Task.objects.bulk_create(tasks)
        TaskLabel.objects.bulk_create(labels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", default="jobsched_bench_labels")
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--output", type=Path, default=Path("docs/bench/label_list.json"))
    parser.add_argument("--compare", action="store_true", help="interleave the semi-join of before")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from bench.database import use_database
    from tasks.selectors import task_page

    use_database(args.database)
    _fill(args.tasks)
    cases = {
        "all": None,
        "env=prod": {"env": "prod"},
        "team=rare": {"team": "rare"},
        "env=prod,team=rare": {"env": "prod", "team": "rare"},
    }
    result: dict[str, object] = {"tasks": args.tasks, "samples": args.samples, "limit": 50}
    if args.compare:
        result["compare"] = _compare(cases, args.samples)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        return 0
    for name, labels in cases.items():
        samples = []
        for _ in range(args.samples):
            began = time.perf_counter()
            rows, _ = task_page(tenant_id=TENANT, before=None, limit=50, labels=labels)
            samples.append((time.perf_counter() - began) * 1000)
        result[name] = {
            "rows": len(rows),
            "p50_ms": round(_percentile(samples, 0.5), 2),
            "p99_ms": round(_percentile(samples, 0.99), 2),
            "mean_ms": round(statistics.fmean(samples), 2),
        }
        print(f"{name:>20}: {result[name]}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def _semi_join_page(labels: dict[str, str]) -> list:
    """The filtered page as the selector read it before: one ORM semi-join per selector."""
    from tasks.models import Task, TaskLabel
    from tasks.selectors import LIVE_STATUSES

    query = Task.objects.filter(tenant_id=TENANT, status__in=LIVE_STATUSES)
    for key, value in labels.items():
        labelled = TaskLabel.objects.filter(tenant_id=TENANT, key=key, value=value)
        query = query.filter(pk__in=labelled.values("task_id"))
    return list(query.order_by("-pk")[:51])


def _compare(cases: dict[str, dict[str, str] | None], samples: int) -> dict[str, object]:
    """Each case's page now and (for a filter) before, taken in turn each round; p50/p99 in ms."""
    from django.db import connection

    from tasks.selectors import task_page

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE TABLE tasks, task_labels")
        cursor.fetchall()
    runs: dict[str, Callable[[], object]] = {}
    for name, labels in cases.items():
        runs[name] = functools.partial(task_page, tenant_id=TENANT, before=None, limit=50, labels=labels)
        if labels:
            runs[f"{name} before"] = functools.partial(_semi_join_page, labels)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(samples):
        for name, run in runs.items():
            began = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - began) * 1000)
    figures: dict[str, object] = {}
    for name, values in times.items():
        figures[name] = {"p50_ms": round(_percentile(values, 0.5), 2), "p99_ms": round(_percentile(values, 0.99), 2)}
        print(f"{name:>28}: {figures[name]}")
    return figures


if __name__ == "__main__":
    sys.exit(main())
