"""`make bench`: the whole system against Celery + Redis, on the same calls, in one run.

    python -m bench.system [--tasks 30000] [--systems jobsched,celery] [--out-dir .bench]

jobsched: N active tasks (100 tenants, several crons and zones) on a dedicated
database, made due at one whole second D, with the real processes running as
shipped (`run_scheduler`, `--executors` x `run_executor --concurrency 500` (prefetch as shipped),
`run_reconciler`). Celery: the same N calls as `eta=D'` tasks on a prefork
worker with a Redis broker (our own Redis when none answers). Both call the
same cheap receiver (bench/receiver.py), which times each arrival.

Prints and writes `<out-dir>/system.json`: when the last job existed, the
first/p50/p95/p99/last call relative to the second, jobs/s, the CPU per job of
each process (the database server's and Redis's too), lost and duplicated
calls; and draws `system-fired-per-100ms.png` and `system-lateness-cdf.png`.
Exit 1 when a call was lost or duplicated. Timings are the machine's: the JSON
records its load average before and after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("jobsched", "celery")
CRONS = ("0 0 1 1 *", "30 6 1 7 *", "15 12 15 3 *", "45 18 1 10 *")  # yearly: never again during a bench
ZONES = ("UTC", "Europe/Madrid", "America/New_York", "Asia/Tokyo", "Australia/Sydney")
FAR_FUTURE = datetime(2100, 1, 1)
CALIBRATION_MESSAGES = 500


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=30_000, help="calls due at one second (default %(default)s)")
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument(
        "--systems",
        default="jobsched,celery",
        help=f"comma-separated, run in this order: {', '.join(SYSTEMS)}",
    )
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=500, help="per executor (the shipped default is 200)")
    parser.add_argument("--executor-args", default="", help="extra run_executor options, space-separated")
    parser.add_argument("--lead-seconds", type=float, default=8.0, help="from making the tasks due to their second")
    parser.add_argument("--celery-concurrency", type=int, default=8, help="prefork pool processes")
    parser.add_argument(
        "--celery-lead-seconds", type=float, default=None, help="default: 5 + twice the measured sending time"
    )
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--database", default="jobsched_sysbench", help="dedicated database, emptied each run")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for every call, per system")
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="py-spy samples executor-0 during the run: <out-dir>/executor-0.pyspy (collapsed stacks)",
    )
    args = parser.parse_args(argv)
    args.systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or not args.systems:
        parser.error(f"--systems: unknown {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if args.tasks < 1 or args.tenants < 1 or args.executors < 1 or args.concurrency < 1:
        parser.error("--tasks, --tenants, --executors and --concurrency must be positive")
    if not args.database.replace("_", "").isalnum():
        parser.error(f"--database: bad name {args.database!r}")
    return args


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- jobsched ----------------------------------------------------------------------------------


def _task_rows(*, tasks: int, tenants: int, url: str) -> Iterator[tuple]:
    """The N tasks, not yet due: tenants, crons and zones in turn, each call naming its task (X-Bench-Task)."""
    return (
        (
            f"bench-tenant-{n % tenants:03d}",
            f"bench task {n}",
            url,
            json.dumps({"X-Bench-Task": str(n), "Content-Type": "application/json"}),
            json.dumps({"n": n}),
            CRONS[n % len(CRONS)],
            ZONES[n % len(ZONES)],
            FAR_FUTURE,
        )
        for n in range(tasks)
    )


def run_jobsched(args: argparse.Namespace, *, log_dir: Path) -> dict[str, Any]:
    """The real processes on N tasks due at one second; the figures of that run."""
    engine = "httptools"  # the executor's one HTTP engine, named in the figures as before
    from database.reachability import database_url_for

    from .database import connect, db_now, insert_tasks, use_database, whole_second_after
    from .figures import cpu_figures, fire_figures
    from .procs import MANAGE, Child, cpu_seconds, database_server_pid, start_executors, stop_all
    from .receiver import Receiver

    name = args.database
    use_database(name)
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for(name),
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "tests.settings"),
        "LOG_LEVEL": "INFO",
    }
    conn = connect(name)
    cursor = conn.cursor()
    cursor.execute("SELECT VERSION()")
    (server_version,) = cursor.fetchone()
    cursor.execute("DELETE FROM jobs")
    cursor.execute("DELETE FROM tasks")
    receiver = Receiver(log_dir, engine)
    env["EGRESS_ALLOWLIST"] = f"127.0.0.1:{receiver.port}"
    log(f"jobsched ({engine}): inserting {args.tasks} tasks for {args.tenants} tenants ...")
    insert_tasks(cursor, _task_rows(tasks=args.tasks, tenants=args.tenants, url=receiver.url))

    executor_options = ["--concurrency", str(args.concurrency), *args.executor_args.split()]
    children = [Child("scheduler", [*MANAGE, "run_scheduler"], env=env, log_dir=log_dir)]
    children += start_executors(args.executors, options=executor_options, env=env, log_dir=log_dir)
    children.append(Child("reconciler", [*MANAGE, "run_reconciler"], env=env, log_dir=log_dir))
    database_pid = database_server_pid(cursor)
    profiler: Child | None = None
    try:
        for child in children:
            child.wait_for_log("event=start", timeout=120)
        # What the executors run with, as they logged it (the prefetch defaults to 20 per call slot).
        prefetch = re.search(r"\bprefetch=(\d+)", children[1].log())
        time.sleep(1.0)  # the first polls and imports settle
        watched = {child.name: child.pid for child in children} | {"receiver": receiver.child.pid}
        watched["database_server"] = database_pid or 0
        if args.profile:
            profile_path = Path(args.out_dir) / "executor-0.pyspy"
            command = ["py-spy", "record", "--pid", str(children[1].pid), "--rate", "200", "--nonblocking"]
            command = [str(Path(sys.executable).parent / command[0]), *command[1:]]
            profiler = Child("py-spy", [*command, "--format", "raw", "-o", str(profile_path)], env=env, log_dir=log_dir)
        cpu_before = {label: cpu_seconds(pid) for label, pid in watched.items()}
        load_before = os.getloadavg()
        due_naive = whole_second_after(db_now(cursor), args.lead_seconds)
        due = due_naive.replace(tzinfo=UTC)
        cursor.execute("UPDATE tasks SET next_run_at = %s", [due_naive])
        log(f"jobsched ({engine}): {args.tasks} tasks due at {due.isoformat()}")

        # When the last job existed: count jobs (the bench database holds only these) until all are there.
        last_job_existed = None
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            cursor.execute("SELECT COUNT(*), NOW(6) FROM jobs")
            jobs, now = cursor.fetchone()
            if jobs >= args.tasks:
                last_job_existed = (now - due_naive).total_seconds()
                break
            if any(child.exited() for child in children):
                break
            time.sleep(0.05)
        complete = receiver.wait_for(args.tasks, timeout=max(1.0, deadline - time.monotonic()), alive=children)
        # Every result written: nothing left running or pending for the second.
        all_recorded = None
        while time.monotonic() < deadline:
            # EXISTS through the status indexes: a COUNT on scheduled_at (no index leads with it)
            # scanned the table every 0.1 s during the burst, on the database it measures.
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending', 'running') AND scheduled_at = %s),"
                " NOW(6)",
                [due_naive],
            )
            left, now = cursor.fetchone()
            if not left:
                all_recorded = (now - due_naive).total_seconds()
                break
            time.sleep(0.1)
        cpu = {label: cpu_seconds(pid) - cpu_before[label] for label, pid in watched.items()}
        load_after = os.getloadavg()
        cursor.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        statuses = dict(cursor.fetchall())
    finally:
        if profiler is not None:
            profiler.process.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            profiler.process.wait(30)
        exits = stop_all(children)
        arrivals = receiver.report()
        receiver.stop()
        conn.close()
    cpu["executors"] = sum(seconds for label, seconds in cpu.items() if label.startswith("executor-"))
    figures = fire_figures(arrivals, due=due.timestamp(), tasks=args.tasks)
    return {
        "system": f"jobsched ({engine})",
        "due_at": due.isoformat(),
        "complete": complete,
        "last_job_existed_seconds": round(last_job_existed, 3) if last_job_existed is not None else None,
        "all_results_recorded_seconds": round(all_recorded, 3) if all_recorded is not None else None,
        **figures,
        **cpu_figures(cpu, jobs=args.tasks),
        "statuses": statuses,
        "exit_codes": exits,
        "processes": {
            "run_scheduler": "shipped defaults",
            "run_executor": f"{args.executors} processes, {' '.join(executor_options)}"
            + (f" (prefetch {prefetch.group(1)})" if prefetch else ""),
            "run_reconciler": "shipped defaults",
        },
        "database_server": server_version,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "_lateness": [at - due.timestamp() for at, _, _, _ in arrivals],
    }


# -- Celery + Redis ----------------------------------------------------------------------------


def run_celery(args: argparse.Namespace, *, log_dir: Path) -> dict[str, Any]:
    """The same N calls as Celery eta tasks on a prefork worker with a Redis broker."""
    import celery
    import redis

    from .figures import cpu_figures, fire_figures
    from .procs import Child, cpu_seconds, descendants
    from .receiver import Receiver
    from .redis_server import RedisServer

    queue = f"jobsched-bench-{os.getpid()}"
    os.environ["BENCH_CELERY_BROKER"] = args.redis_url
    os.environ["BENCH_CELERY_QUEUE"] = queue
    server = RedisServer(args.redis_url, data_dir=ROOT / ".local" / "redis")
    started = server.ensure()
    log(f"celery: Redis at {args.redis_url} ({'started by the bench' if started else 'found running'})")
    client = redis.Redis.from_url(args.redis_url)
    redis_version = client.info("server")["redis_version"]
    receiver = Receiver(log_dir, "celery")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    worker = Child(
        "celery-worker",
        [
            sys.executable, "-m", "celery", "-A", "bench.celery_side", "worker",
            "--pool", "prefork", "--concurrency", str(args.celery_concurrency),
            "--queues", queue, "--loglevel", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ],
        env=env,
        log_dir=log_dir,
    )  # fmt: skip
    try:
        worker.wait_for_log("ready.", timeout=120)
        time.sleep(1.0)
        from .celery_side import app, fire

        pool = descendants(worker.pid)
        watched = {"celery_worker_main": [worker.pid], "celery_pool": pool, "redis": [server.pid or 0]}
        watched["receiver"] = [receiver.child.pid]

        def cpu_now() -> dict[str, float]:
            return {label: sum(cpu_seconds(pid) for pid in pids) for label, pids in watched.items()}

        cpu_before = cpu_now()
        load_before = os.getloadavg()
        lead = args.celery_lead_seconds
        if lead is None:
            # Celery publishes one message per apply_async: time 500 on a scratch queue nobody consumes,
            # so every eta task is sent before its second even on a busy machine.
            scratch = f"{queue}-calibration"
            started_sending = time.monotonic()
            with app.producer_or_acquire() as producer:
                for _ in range(CALIBRATION_MESSAGES):
                    fire.apply_async((receiver.url, "calibration", "", "-1"), producer=producer, queue=scratch)
            per_message = (time.monotonic() - started_sending) / CALIBRATION_MESSAGES
            client.delete(scratch)
            lead = 5 + 2 * per_message * args.tasks
            log(f"celery: {1 / per_message:.0f} messages/s sent; the calls are due in {lead:.0f} s")
        due = datetime.fromtimestamp(math.ceil(time.time() + lead), UTC)
        log(f"celery: sending {args.tasks} eta tasks due at {due.isoformat()} ...")
        scheduled = due.isoformat()
        with app.producer_or_acquire() as producer:
            for n in range(args.tasks):
                fire.apply_async(
                    (receiver.url, str(uuid.uuid4()), scheduled, str(n)), eta=due, producer=producer, queue=queue
                )
        last_job_existed = time.time() - due.timestamp()
        if last_job_existed > 0:
            log(f"warning: sending ended {last_job_existed:.1f} s after the second; raise --celery-lead-seconds")
        complete = receiver.wait_for(args.tasks, timeout=args.timeout + lead, alive=[worker])
        time.sleep(0.5)  # the last task's ack
        cpu = {label: cpu_now()[label] - cpu_before[label] for label in watched}
        load_after = os.getloadavg()
    finally:
        worker.stop(60)
        arrivals = receiver.report()
        receiver.stop()
        client.delete(queue)
        if started:
            server.stop()
    cpu["celery_worker"] = cpu["celery_worker_main"] + cpu["celery_pool"]
    return {
        "system": "celery + redis",
        "due_at": due.isoformat(),
        "complete": complete,
        "last_job_existed_seconds": round(last_job_existed, 3),
        **fire_figures(arrivals, due=due.timestamp(), tasks=args.tasks),
        **cpu_figures(cpu, jobs=args.tasks),
        "processes": {
            "celery_worker": f"celery {celery.__version__}, prefork, --concurrency {args.celery_concurrency}, "
            "eta tasks, early ack, no result backend; http.client keep-alive per pool process",
            "redis": f"{redis_version} ({'started by the bench' if started else 'found running'})",
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
        "_lateness": [at - due.timestamp() for at, _, _, _ in arrivals],
    }


# -- the run -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    sys.path.insert(0, str(ROOT))
    django.setup()
    out_dir = Path(args.out_dir)
    log_dir = out_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "tasks": args.tasks,
        "tenants": args.tenants,
        "zones": list(ZONES),
        "systems": {},
    }
    for name in args.systems:
        if name == "celery":
            result["systems"][name] = run_celery(args, log_dir=log_dir)
        else:
            result["systems"][name] = run_jobsched(args, log_dir=log_dir)
        summary = {k: v for k, v in result["systems"][name].items() if not k.startswith("_")}
        log(f"{name}: {json.dumps(summary)}")
    lateness = {name: figures.pop("_lateness") for name, figures in result["systems"].items()}
    systems = result["systems"]
    if "jobsched" in systems and "celery" in systems:
        ours, theirs = systems["jobsched"].get("fire_seconds"), systems["celery"].get("fire_seconds")
        if ours and theirs and ours["last"] > 0:
            result["celery_last_call_over_jobsched_last_call"] = round(theirs["last"] / ours["last"], 2)
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if not args.no_plots:
        from .plots import draw

        title = f"{args.tasks:,} calls due at one second, {os.cpu_count()} cores, {result['date'][:10]}"
        result["plots"] = [str(path) for path in draw(lateness, out_dir=out_dir, title=title)]
    (out_dir / "system.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    bad = [
        name for name, figures in systems.items() if figures["lost"] or figures["duplicated"] or not figures["complete"]
    ]
    if bad:
        log(f"calls lost or duplicated in: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
