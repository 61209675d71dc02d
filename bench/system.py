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
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("jobsched", "jobsched-cold", "celery", "api")
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
        default="jobsched,jobsched-cold,celery",
        help=f"comma-separated, run in this order: {', '.join(SYSTEMS)} (jobsched-cold: the processes start"
        " at the second the tasks are due)",
    )
    parser.add_argument(
        "--base",
        type=Path,
        help="another checkout (the base commit): its processes run the jobsched systems too, interleaved"
        " with this checkout's, on a database of their own (<database>_base)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --base: runs of each checkout, alternating")
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="start the processes without compiled modules (each compiles its modules from source, as the"
        " image did before it shipped bytecode: their __pycache__ directories are removed); default: every"
        " module compiled first, as the image ships them",
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
    if args.rounds < 1:
        parser.error("--rounds must be positive")
    if args.base is not None:
        if not (args.base / "manage.py").is_file():
            parser.error(f"--base: {args.base} is not a jobsched checkout")
        args.base = args.base.resolve()
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


def prepare_database(checkout: Path, name: str) -> None:
    """`name` created and migrated by `checkout`'s own code (a base checkout has its own migrations)."""
    from database.reachability import database_url_for

    from .database import use_database

    if checkout == ROOT:
        use_database(name)
        return
    env = {**os.environ, "DATABASE_URL": database_url_for(name), "PYTHONPATH": str(checkout)}
    for command in (["ensure_database"], ["migrate", "--verbosity", "0"]):
        subprocess.run([sys.executable, str(checkout / "manage.py"), *command], env=env, cwd=checkout, check=True)


TICK_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*\bevent=tick\b.*\btasks=(\d+)", re.MULTILINE)


def last_tick_seconds(scheduler_log: str, *, jobs: int, due: float) -> float | None:
    """When the last job existed, from the scheduler's own log: the time of the tick (logged after its
    commit) that brought the runs scheduled to `jobs`, relative to `due`. Counting the jobs table every
    50 ms instead cost the database server it measures a share of a core while the jobs were made."""
    made = 0
    for match in TICK_LINE.finditer(scheduler_log):
        made += int(match.group(3))
        if made >= jobs:
            logged = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").timestamp() + int(match.group(2)) / 1000
            return logged - due
    return None


def compile_bytecode(checkout: Path) -> None:
    """Every module of `checkout` compiled, as the image ships them (deploy/Dockerfile): under
    PYTHONDONTWRITEBYTECODE a process would compile its modules from source at each start."""
    modules = [str(path.parent) for path in sorted(checkout.glob("*/__init__.py"))] + [str(checkout / "manage.py")]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *modules], check=True, stdout=subprocess.DEVNULL
    )


def remove_bytecode(checkout: Path) -> None:
    """The project's own compiled modules removed (`make bytecode` compiles them again)."""
    for package in checkout.glob("*/__init__.py"):
        for cache in package.parent.rglob("__pycache__"):
            shutil.rmtree(cache)


def _commit(checkout: Path) -> str:
    found = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip()


def run_jobsched(
    args: argparse.Namespace, *, log_dir: Path, checkout: Path = ROOT, database: str, cold: bool = False
) -> dict[str, Any]:
    """The real processes on N tasks due at one second; the figures of that run.

    Warm (the default): the processes run first and the tasks are made due `--lead-seconds` later.
    `cold`: the tasks are due at a whole second and the processes are started at that second, as
    after a deployment or an outage with work waiting; every figure counts from that second.
    """
    engine = "httptools"  # the executor's one HTTP engine, named in the figures as before
    from database.reachability import database_url_for

    from .database import connect, db_now, insert_tasks, whole_second_after
    from .figures import cpu_figures, fire_figures
    from .procs import Child, cpu_seconds, database_server_pid, start_executors, stop_all
    from .receiver import Receiver

    manage = [sys.executable, str(checkout / "manage.py")]
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for(database),
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "tests.settings"),
        "LOG_LEVEL": "INFO",
        "PYTHONPATH": str(checkout),
    }
    if args.no_bytecode:
        # As the image was: the libraries compiled (pip did), the project's own modules compiled at each start.
        remove_bytecode(checkout)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    conn = connect(database)
    cursor = conn.cursor()
    cursor.execute("SELECT VERSION()")
    (server_version,) = cursor.fetchone()
    cursor.execute("DELETE FROM jobs")
    cursor.execute("DELETE FROM tasks")
    receiver = Receiver(log_dir, engine)
    env["EGRESS_ALLOWLIST"] = f"127.0.0.1:{receiver.port}"
    log(f"jobsched ({engine}, {_commit(checkout)}): inserting {args.tasks} tasks for {args.tenants} tenants ...")
    insert_tasks(cursor, _task_rows(tasks=args.tasks, tenants=args.tenants, url=receiver.url))

    executor_options = ["--concurrency", str(args.concurrency), *args.executor_args.split()]
    database_pid = database_server_pid(cursor)
    children: list[Child] = []
    profiler: Child | None = None

    def start_children() -> None:
        children.append(Child("scheduler", [*manage, "run_scheduler"], env=env, log_dir=log_dir))
        executors = start_executors(args.executors, options=executor_options, env=env, log_dir=log_dir, manage=manage)
        children.extend(executors)
        children.append(Child("reconciler", [*manage, "run_reconciler"], env=env, log_dir=log_dir))

    try:
        if cold:
            # Due at a whole second, in the database's clock; the processes start when it comes.
            due_naive = whole_second_after(db_now(cursor), 2.0)
            cursor.execute("UPDATE tasks SET next_run_at = %s", [due_naive])
            due = due_naive.replace(tzinfo=UTC)
            cpu_before = {"database_server": cpu_seconds(database_pid), "receiver": cpu_seconds(receiver.child.pid)}
            load_before = os.getloadavg()
            time.sleep(max(0.0, due.timestamp() - time.time()))
            start_children()
            log(f"jobsched ({engine}): processes started at {due.isoformat()}, when {args.tasks} tasks are due")
            cpu_before.update({child.name: 0.0 for child in children})
        else:
            start_children()
            for child in children:
                child.wait_for_log("event=start", timeout=120)
            time.sleep(1.0)  # the first polls and imports settle
            cpu_before = {child.name: cpu_seconds(child.pid) for child in children}
            cpu_before |= {"receiver": cpu_seconds(receiver.child.pid), "database_server": cpu_seconds(database_pid)}
            load_before = os.getloadavg()
            due_naive = whole_second_after(db_now(cursor), args.lead_seconds)
            due = due_naive.replace(tzinfo=UTC)
            cursor.execute("UPDATE tasks SET next_run_at = %s", [due_naive])
            log(f"jobsched ({engine}): {args.tasks} tasks due at {due.isoformat()}")
        watched = {child.name: child.pid for child in children} | {"receiver": receiver.child.pid}
        watched["database_server"] = database_pid or 0
        if args.profile:
            profile_path = Path(args.out_dir) / "executor-0.pyspy"
            command = ["py-spy", "record", "--pid", str(children[1].pid), "--rate", "200", "--nonblocking"]
            command = [str(Path(sys.executable).parent / command[0]), *command[1:]]
            profiler = Child("py-spy", [*command, "--format", "raw", "-o", str(profile_path)], env=env, log_dir=log_dir)

        deadline = time.monotonic() + args.timeout
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
        # What the executors run with, as they logged it (the prefetch defaults to 20 per call slot).
        prefetch = re.search(r"\bprefetch=(\d+)", children[1].log())
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
    last_job_existed = last_tick_seconds(children[0].log(), jobs=args.tasks, due=due.timestamp())
    return {
        "system": f"jobsched ({engine})" + (", cold start" if cold else ""),
        "commit": _commit(checkout),
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
            "bytecode": "none (compiled at start)" if args.no_bytecode else "compiled before the run",
            "started": "at the second the tasks are due"
            if cold
            else f"{args.lead_seconds:g} s before the tasks are due",
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

# Issue #33's goals for the jobsched systems: (goal, system, figure path, target, "max" or "min").
GOALS = (
    ("2. cold start: first call (s)", "jobsched-cold", ("fire_seconds", "first"), 1.0),
    ("2. cold start: last call (s)", "jobsched-cold", ("fire_seconds", "last"), 6.0),
    ("3. warm burst: longest time without a call until the last 500 (s)", "jobsched",
     ("stalls", "longest_gap_seconds"), 0.1),
    ("3. warm burst: last call (s)", "jobsched", ("fire_seconds", "last"), 4.0),
    ("4. database server CPU per job (ms)", "jobsched", ("cpu_ms_per_job", "database_server"), 0.25),
)  # fmt: skip
MACHINE_LOOP = 5_000_000


def machine_speed() -> float:
    """Seconds of one core for a fixed pure-Python loop: how fast the machine is that day (the same
    machine kind has run the same bench at half the speed of another day)."""
    started = time.process_time()
    total = 0
    for n in range(MACHINE_LOOP):
        total += n
    return round(time.process_time() - started, 3)


def _figure(run: dict[str, Any], path: tuple[str, str]) -> float | None:
    value = run.get(path[0], {})
    return value.get(path[1]) if isinstance(value, dict) else None


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def goals(runs: dict[str, list[dict[str, Any]]], base_runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each goal's figure (the median over this checkout's rounds) beside its target, and the base's."""
    rows = []
    for goal, system, path, target in GOALS:
        values = [value for run in runs.get(system, []) if (value := _figure(run, path)) is not None]
        if not values:
            continue
        figure = _median(values)
        row: dict[str, Any] = {"goal": goal, "figure": round(figure, 4), "target": target, "met": figure <= target}
        base_values = [value for run in base_runs.get(system, []) if (value := _figure(run, path)) is not None]
        if base_values:
            row["base"] = round(_median(base_values), 4)
        rows.append(row)
    return rows


def _api_goals(api: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for phase, verdict in api["targets"].items():
        rows.append(
            {
                "goal": f"1. API {phase}: requests per second",
                "figure": verdict["requests_per_second"],
                "target": verdict["target_requests_per_second"],
                "met": verdict["rate_met"],
                "base": verdict["base_requests_per_second"],
            }
        )
        rows.append(
            {
                "goal": f"1. API {phase}: p99 (ms)",
                "figure": verdict["p99_ms"],
                "target": verdict["target_p99_ms"],
                "met": verdict["p99_met"],
            }
        )
    return rows  # fmt: skip


def run_api(args: argparse.Namespace, *, out_dir: Path) -> dict[str, Any]:
    """bench.api's two phases (create, list of 50) for this checkout, and for `--base` interleaved."""

    from . import api

    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed: scripts/os-packages.sh bench installs it")
    options = api.parse_args([])  # its defaults: 10 s per phase, 16 connections, 3 workers
    runs: list[dict[str, Any]] = []
    base_runs: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        if args.base is not None:
            base_runs.append(api.measure(args.base, f"{options.database}_base", options, out_dir / "base", wrk))
        runs.append(api.measure(ROOT, options.database, options, out_dir, wrk))
    if base_runs:
        base_rates = {phase: _median([run[phase]["requests_per_second"] for run in base_runs]) for phase in api.PHASES}
        reference = f"{args.base} (measured here, interleaved)"
    else:
        committed = json.loads((ROOT / "docs" / "bench" / "api.json").read_text())
        base_rates = {phase: committed[phase]["requests_per_second"] for phase in api.PHASES}
        reference = f"docs/bench/api.json ({committed.get('date', 'undated')})"
    return {"base": reference, "runs": runs, "base_runs": base_runs, "targets": api.verdicts(runs, base_rates)}


def _print_goals(rows: list[dict[str, Any]]) -> None:
    width = max((len(row["goal"]) for row in rows), default=0)
    for row in rows:
        base = f"   (base {row['base']:g})" if "base" in row else ""
        verdict = "met" if row["met"] else "NOT met"
        print(f"  {row['goal']:<{width}}  {row['figure']:>9g}  target {row['target']:g}: {verdict}{base}", flush=True)


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
        "commit": _commit(ROOT),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            "python_loop_seconds": machine_speed(),
            "python_loop": f"CPU seconds of `for n in range({MACHINE_LOOP:_}): total += n`",
        },
        "tasks": args.tasks,
        "tenants": args.tenants,
        "zones": list(ZONES),
        "systems": {},
    }
    runs: dict[str, list[dict[str, Any]]] = {}
    base_runs: dict[str, list[dict[str, Any]]] = {}
    for checkout in [] if args.no_bytecode else [ROOT] if args.base is None else [args.base, ROOT]:
        compile_bytecode(checkout)
    if args.base is not None:
        result["base"] = {"checkout": str(args.base), "commit": _commit(args.base), "systems": {}}
        prepare_database(args.base, f"{args.database}_base")
    prepare_database(ROOT, args.database)
    for name in args.systems:
        if name == "api":
            result["api"] = run_api(args, out_dir=out_dir)
            continue
        for round_number in range(1, (args.rounds if name != "celery" else 1) + 1):
            checkouts = [ROOT] if args.base is None or name == "celery" else [args.base, ROOT]
            for checkout in checkouts:
                label = "base" if checkout != ROOT else "this"
                if name == "celery":
                    figures = run_celery(args, log_dir=log_dir)
                else:
                    database = args.database if checkout == ROOT else f"{args.database}_base"
                    run_logs = log_dir / name / label
                    run_logs.mkdir(parents=True, exist_ok=True)
                    figures = run_jobsched(
                        args, log_dir=run_logs, checkout=checkout, database=database, cold=name == "jobsched-cold"
                    )
                (runs if checkout == ROOT else base_runs).setdefault(name, []).append(figures)
                summary = {k: v for k, v in figures.items() if not k.startswith("_")}
                log(f"{name} ({label}, round {round_number}): {json.dumps(summary)}")
    lateness: dict[str, list[float]] = {}
    for name, system_runs in runs.items():
        lateness[name] = system_runs[-1]["_lateness"]
        for run in system_runs:
            run.pop("_lateness", None)
        result["systems"][name] = {**system_runs[-1], **({"rounds": system_runs} if len(system_runs) > 1 else {})}
    for name, system_runs in base_runs.items():
        result["base"]["systems"][name] = {"rounds": system_runs}
        lateness[f"{name} (base)"] = system_runs[-1].pop("_lateness")
        for run in system_runs:
            run.pop("_lateness", None)
    systems = result["systems"]
    if "jobsched" in systems and "celery" in systems:
        ours, theirs = systems["jobsched"].get("fire_seconds"), systems["celery"].get("fire_seconds")
        if ours and theirs and ours["last"] > 0:
            result["celery_last_call_over_jobsched_last_call"] = round(theirs["last"] / ours["last"], 2)
    result["goals"] = goals(runs, base_runs) + (_api_goals(result["api"]) if "api" in result else [])
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if not args.no_plots:
        from .plots import draw

        title = f"{args.tasks:,} calls due at one second, {os.cpu_count()} cores, {result['date'][:10]}"
        result["plots"] = [str(path) for path in draw(lateness, out_dir=out_dir, title=title)]
    (out_dir / "system.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print("issue #33 goals (figure, target):")
    _print_goals(result["goals"])
    every_run = [run for group in (runs, base_runs) for system_runs in group.values() for run in system_runs]
    bad = [run["system"] for run in every_run if run["lost"] or run["duplicated"] or not run["complete"]]
    if bad:
        log(f"calls lost or duplicated in: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
