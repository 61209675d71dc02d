"""`make bench-vitess`: the 30,000-call burst on two Vitess shards beside the single primary.

    python -m bench.vitess [--tasks 30000] [--systems single,sharded] [--out-dir .bench]

single: bench.system's jobsched run as shipped (run_scheduler, 2 x run_executor, run_reconciler on
one MariaDB, its own database jobsched_sysbench). sharded: the same N tasks (100 tenants) inserted
through vtgate, which spreads them over the two shards by xxhash(tenant_id); then one loop set per
shard (run_scheduler, `--executors-per-shard` x run_executor, run_reconciler), each with
DATABASE_URL at vtgate targeting its shard. Both call the same kind of receiver
(bench/receiver.py). Prints and writes `<out-dir>/vitess.json` (the figures of bench.system per
run, the tasks per shard, the load average before and after). Exit 1 when a call was lost or
duplicated. Needs the cluster (`make vitess`, migrated: `make vitess-migrate`) and
VITESS_VTGATE_PORT. Both shards share this machine's one mysqld and cores: the figure says what
the split costs on one box, not what two machines would give.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django

ROOT = Path(__file__).resolve().parent.parent
SHARDS = ("-80", "80-")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=30_000)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--systems", default="single,sharded", help="comma-separated: single, sharded")
    parser.add_argument("--executors", type=int, default=2, help="single primary's executors")
    parser.add_argument("--executors-per-shard", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=500, help="per executor")
    parser.add_argument("--executor-args", default="")
    parser.add_argument("--lead-seconds", type=float, default=8.0)
    parser.add_argument("--database", default="jobsched_sysbench", help="the single primary's bench database")
    parser.add_argument("--vtgate-port", type=int, default=int(os.environ.get("VITESS_VTGATE_PORT", "0")))
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    args = parser.parse_args(argv)
    args.systems = [name.strip() for name in args.systems.split(",") if name.strip()]
    args.profile = False  # what bench.system.run_jobsched reads besides these options
    args.no_bytecode = False
    return args


def log(message: str) -> None:
    print(f"[bench.vitess {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def vtgate(port: int, target: str = "@primary"):
    """An autocommit session at vtgate (the cluster's mysqld run in UTC: no SET needed)."""
    import MySQLdb

    return MySQLdb.connect(
        host="127.0.0.1", port=port, user="root", database=target, charset="utf8mb4", binary_prefix=True,
        autocommit=True,
    )  # fmt: skip


def cluster_pids() -> dict[str, int]:
    """This checkout's vtcombo (vtgate + the vttablets) and its mysqld, found by their state directory."""
    state = str(ROOT / ".local" / "vitess" / "run")
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not command or state.encode() not in b" ".join(command):
            continue
        name = Path(command[0].decode(errors="replace")).name
        if name in ("vtcombo", "mariadbd", "mysqld"):
            found["vtcombo" if name == "vtcombo" else "vitess_mysqld"] = int(entry.name)
    return found


def run_sharded(args: argparse.Namespace, *, log_dir: Path) -> dict[str, Any]:
    from .database import db_now, insert_tasks, whole_second_after
    from .figures import cpu_figures, fire_figures
    from .procs import MANAGE, Child, cpu_seconds, start_executors, stop_all
    from .receiver import Receiver
    from .system import _task_rows

    if not args.vtgate_port:
        raise SystemExit("VITESS_VTGATE_PORT (or --vtgate-port): the cluster's vtgate (make vitess)")
    conn = vtgate(args.vtgate_port)
    cursor = conn.cursor()
    # Per tenant: vttablet refuses a statement that changes more than 10,000 rows of a shard.
    tenants = sorted({row[0] for row in _task_rows(tasks=args.tasks, tenants=args.tenants, url="")})
    for table in ("jobs", "tasks"):
        for tenant in tenants:
            cursor.execute(f"DELETE FROM {table} WHERE tenant_id = %s", [tenant])
    receiver = Receiver(log_dir, "httptools")
    log(f"sharded: inserting {args.tasks} tasks for {args.tenants} tenants through vtgate ...")
    insert_tasks(cursor, _task_rows(tasks=args.tasks, tenants=args.tenants, url=receiver.url), chunk=2000)
    per_shard = {}
    for shard in SHARDS:
        with vtgate(args.vtgate_port, f"jobsched_tenants:{shard}") as shard_conn:
            shard_cursor = shard_conn.cursor()
            shard_cursor.execute("SELECT COUNT(*), COUNT(DISTINCT tenant_id) FROM tasks")
            per_shard[shard] = dict(zip(("tasks", "tenants"), shard_cursor.fetchone(), strict=True))
    log(f"sharded: per shard {per_shard}")

    executor_options = ["--concurrency", str(args.concurrency), *args.executor_args.split()]
    children: list[Child] = []
    for shard in SHARDS:
        env = {
            **os.environ,
            "DATABASE_URL": f"mysql://root@127.0.0.1:{args.vtgate_port}/jobsched_tenants:{shard}",
            "DATABASE_VITESS": "1",
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "tests.settings"),
            "LOG_LEVEL": "INFO",
            "EGRESS_ALLOWLIST": f"127.0.0.1:{receiver.port}",
        }
        children.append(Child(f"scheduler{shard}", [*MANAGE, "run_scheduler"], env=env, log_dir=log_dir))
        children += start_executors(
            args.executors_per_shard, options=executor_options, env=env, log_dir=log_dir,
            name=f"executor{shard}", worker=f"bench{shard}",
        )  # fmt: skip
        children.append(Child(f"reconciler{shard}", [*MANAGE, "run_reconciler"], env=env, log_dir=log_dir))
    try:
        for child in children:
            child.wait_for_log("event=start", timeout=120)
        time.sleep(1.0)
        watched = {child.name: child.pid for child in children} | {"receiver": receiver.child.pid} | cluster_pids()
        cpu_before = {label: cpu_seconds(pid) for label, pid in watched.items()}
        load_before = os.getloadavg()
        due_naive = whole_second_after(db_now(cursor), args.lead_seconds)
        due = due_naive.replace(tzinfo=UTC)
        for tenant in tenants:  # one shard each (the 10,000-row cap above), ~0.5 s in all: inside the lead
            cursor.execute("UPDATE tasks SET next_run_at = %s WHERE tenant_id = %s", [due_naive, tenant])
        log(f"sharded: {args.tasks} tasks due at {due.isoformat()}")
        deadline = time.monotonic() + args.timeout
        complete = receiver.wait_for(args.tasks, timeout=args.timeout, alive=children)
        all_recorded = None
        while time.monotonic() < deadline:
            cursor.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'running')")
            if cursor.fetchone()[0] == 0:
                all_recorded = (db_now(cursor) - due_naive).total_seconds()
                break
            time.sleep(0.1)
        cpu = {label: cpu_seconds(pid) - cpu_before[label] for label, pid in watched.items()}
        load_after = os.getloadavg()
        cursor.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status")
        statuses = {status: int(count) for status, count in cursor.fetchall()}
    finally:
        exits = stop_all(children)
        arrivals = receiver.report()
        receiver.stop()
        conn.close()
    cpu["executors"] = sum(seconds for label, seconds in cpu.items() if label.startswith("executor"))
    return {
        "system": "jobsched on 2 Vitess shards (a loop set per shard, through vtgate)",
        "due_at": due.isoformat(),
        "complete": complete,
        "all_results_recorded_seconds": round(all_recorded, 3) if all_recorded is not None else None,
        **fire_figures(arrivals, due=due.timestamp(), tasks=args.tasks),
        **cpu_figures(cpu, jobs=args.tasks),
        "per_shard": per_shard,
        "statuses": statuses,
        "exit_codes": exits,
        "processes": {
            "per shard": f"run_scheduler, {args.executors_per_shard} x run_executor {' '.join(executor_options)},"
            " run_reconciler",
        },
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ.pop("DATABASE_VITESS", None)  # this process and the single primary's loops: plain MariaDB
    sys.path.insert(0, str(ROOT))
    django.setup()
    out_dir = Path(args.out_dir)
    log_dir = out_dir / "logs-vitess"
    log_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "tasks": args.tasks,
        "tenants": args.tenants,
        "systems": {},
    }
    for name in args.systems:
        if name == "single":
            from .system import compile_bytecode, prepare_database, run_jobsched

            compile_bytecode(ROOT)
            prepare_database(ROOT, args.database)
            figures = run_jobsched(args, log_dir=log_dir, database=args.database)
        else:
            figures = run_sharded(args, log_dir=log_dir)
        figures.pop("_lateness", None)
        result["systems"][name] = figures
        log(f"{name}: {json.dumps(figures)}")
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    (out_dir / "vitess.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    bad = [n for n, f in result["systems"].items() if f["lost"] or f["duplicated"] or not f["complete"]]
    if bad:
        log(f"calls lost or duplicated in: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
