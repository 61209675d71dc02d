"""The executor's HTTP path alone: CPU per call of its one engine on uvloop, interleaved runs.

    python -m bench.delivery [--calls 20000] [--concurrency 500] [--repeat 3] [--only httptools+uvloop]

Each run is a fresh process that sends `--calls` jobs through the executor's
own `DeliveryClient` (the dial-time egress check included) to bench/receiver.py,
`--concurrency` at a time, and reports its own CPU time per call
(getrusage). No database: on a shared machine the database's noise would drown
a few tens of microseconds. Combinations run interleaved (A B C D A B C D ...)
so a change in the machine's load hits each alike; the figure is the median.
Writes `<out-dir>/delivery.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMBINATIONS = (("httptools", "uvloop"),)  # the one engine, on the executor's event loop


def _one_run(engine: str, loop_name: str, calls: int, concurrency: int, url: str, port: int) -> dict[str, float]:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    sys.path.insert(0, str(ROOT))
    django.setup()
    from jobs.queue import ClaimedJob
    from outbound.client import DeliveryClient
    from outbound.egress import Allowlist, EgressPolicy

    now = datetime.now(UTC)
    jobs = [
        ClaimedJob(
            id=uuid.uuid4(),
            tenant_id=f"bench-tenant-{n % 100}",
            task_id=uuid.uuid4(),
            scheduled_at=now,
            attempt=1,
            fence=1,
            max_attempts=3,
            next_attempt_at=now,
            timeout_seconds=30,
            backoff_base_seconds=10,
            method="POST",
            url=url,
            headers={"X-Bench-Task": str(n), "Content-Type": "application/json"},
            body=json.dumps({"n": n}),
            secret_ref=None,
            due_in=0.0,
        )
        for n in range(calls)
    ]

    async def main() -> tuple[float, float, int]:
        client = DeliveryClient(policy=EgressPolicy(Allowlist.parse(f"127.0.0.1:{port}")), max_connections=concurrency)
        gate = asyncio.Semaphore(concurrency)
        ok = 0

        async def one(job: ClaimedJob) -> None:
            nonlocal ok
            async with gate:
                delivery = await client.send(job)
                ok += delivery.http_status == 200

        started_cpu = resource.getrusage(resource.RUSAGE_SELF)
        started = time.monotonic()
        await asyncio.gather(*(one(job) for job in jobs))
        wall = time.monotonic() - started
        usage = resource.getrusage(resource.RUSAGE_SELF)
        await client.aclose()
        cpu = (usage.ru_utime - started_cpu.ru_utime) + (usage.ru_stime - started_cpu.ru_stime)
        return cpu, wall, ok

    factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop
    if loop_name == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        cpu, wall, ok = runner.run(main())
    return {"cpu_ms_per_call": 1000 * cpu / calls, "calls_per_second": calls / wall, "ok": ok}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    parser.add_argument(
        "--only", default="", help="comma-separated engine+loop names to run (default all), e.g. httptools+uvloop"
    )
    parser.add_argument("--child", nargs=4, metavar=("ENGINE", "LOOP", "URL", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        engine, loop_name, url, port = args.child
        print(json.dumps(_one_run(engine, loop_name, args.calls, args.concurrency, url, int(port))))
        return 0
    receiver = subprocess.Popen(
        [sys.executable, "-u", "-m", "bench.receiver", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    only = {name for name in args.only.split(",") if name}
    combinations = [(engine, loop) for engine, loop in COMBINATIONS if not only or f"{engine}+{loop}" in only]
    if not combinations:
        parser.error(f"--only: none of {sorted(only)} is one of {[f'{e}+{lp}' for e, lp in COMBINATIONS]}")
    runs: dict[str, list[dict[str, float]]] = {f"{engine}+{loop}": [] for engine, loop in combinations}
    load_before = os.getloadavg()
    try:
        assert receiver.stdout is not None
        port = int(receiver.stdout.readline())
        url = f"http://127.0.0.1:{port}/hook"
        for round_number in range(args.repeat):
            for engine, loop_name in combinations:
                done = subprocess.run(
                    [
                        *(sys.executable, "-m", "bench.delivery", "--calls", str(args.calls)),
                        *("--concurrency", str(args.concurrency), "--child", engine, loop_name, url, str(port)),
                    ],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    check=True,
                )
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                runs[f"{engine}+{loop_name}"].append(figures)
                print(f"[delivery] round {round_number + 1}: {engine}+{loop_name} {figures}", flush=True)
    finally:
        receiver.kill()
        receiver.wait()
    result = {
        "calls": args.calls,
        "concurrency": args.concurrency,
        "repeat": args.repeat,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "median_cpu_ms_per_call": {
            name: round(statistics.median(r["cpu_ms_per_call"] for r in figures), 4) for name, figures in runs.items()
        },
        "median_calls_per_second": {
            name: round(statistics.median(r["calls_per_second"] for r in figures), 1) for name, figures in runs.items()
        },
        "all_ok": all(r["ok"] == args.calls for figures in runs.values() for r in figures),
    }
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.out_dir) / "delivery.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
