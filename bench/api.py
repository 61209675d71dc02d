"""The tenant API under gunicorn: task create and list rates with p50/p99 latency, measured by wrk.

    python -m bench.api [--seconds 10] [--connections 16] [--workers 3] [--seed-active N] [--profile]
    python -m bench.api --base /path/to/other/checkout [--rounds 2]

On its own database (default `jobsched_sysbench_api`, created and migrated,
its tasks and tenant limits emptied, with `--seed-active` that many active
tasks of the tenant made first), it starts `gunicorn jobsched_project.wsgi` on a loopback
port (DEBUG off, per-tenant throttle off unless `--tenant-throttle-rate` says
otherwise; the throttle's cache is the production default, the database's),
issues one tenant's token, warms the workers up (`--warmup` seconds of each
phase, not counted: a worker imports the URLconf and the views on its first
request), then runs wrk (Debian's `wrk`, installed by scripts/os-packages.sh
bench): `POST /v1/tasks` (a cron task in a zone, each request creating one) and
then `GET /v1/tasks?limit=50` (newest first, the first page of the tasks just
created), then `GET /v1/tasks/{id}` of one task (no target of its own; with `--base`
its rate beside the base's under "extras"). wrk runs on the same machine, so it takes part of the cores it
measures; the workers' and the database server's CPU seconds per phase are
recorded beside the rates (the latter includes anyone else's statements).

With `--base CHECKOUT` (e.g. `git worktree add /tmp/base <commit>`), the same
harness also serves that checkout's code (its own database, `<database>_base`),
interleaved with this one's, `--rounds` times: the two are measured in one
session under the same load. Each figure is printed beside its target (issue
#33: at least TARGET_SPEEDUP times the base rate, p99 at most TARGET_P99_MS);
without `--base`, the base rate is `--reference` (the committed figures).
Writes `<out-dir>/api.json`. `--profile` samples the workers with py-spy (see
bench/api_profile.py for the table by component).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TASK_BODY = {
    "name": "bench task",
    "schedule": {"cron": "*/5 * * * *", "timezone": "Europe/Madrid"},
    "http": {"url": "http://127.0.0.1:18080/hook", "method": "POST", "headers": {"X-Bench": "1"}, "body": "{}"},
}
PROFILE_RATE = 200  # py-spy samples per second
PHASES = ("create", "list_limit_50")
# Measured and compared with the base, with no target of their own: a one-task read (GET /v1/tasks/{id},
# as a Terraform refresh or an SDK's get sends it) takes the path PATCH, DELETE, pause and resume read by.
EXTRA_PHASES = ("get_one",)
TARGET_SPEEDUP = 4.0  # issue #33 goal 1: each phase at least 4x the base's requests per second ...
TARGET_P99_MS = 60.0  # ... with p99 at or under 60 ms (16 connections, 2 cores)
BENCH_TENANT = "bench-api"
# Through the checkout's own models, so the base's schema is seeded as its code wrote it.
SEED = """
from datetime import timedelta
from django.utils import timezone
from tasks.models import Task, TenantLimits
Task.objects.all().delete()
TenantLimits.objects.all().delete()
later = timezone.now() + timedelta(days=1)
Task.objects.bulk_create(
    [Task(tenant_id="{tenant}", name=f"seed {{n}}", http_url="http://127.0.0.1:18080/hook",
          cron_expression="0 0 * * *", timezone="UTC", next_run_at=later) for n in range({count})],
    batch_size=1000,
)
"""
CREATE_SCRIPT = """
wrk.method = "POST"
wrk.body = [[{body}]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _found(pattern: str, text: str, flags: int = 0) -> re.Match[str]:
    """The match of a line wrk always prints; its absence means wrk's output changed."""
    match = re.search(pattern, text, flags)
    if match is None:
        raise ValueError(f"wrk output has no match for {pattern!r}")
    return match


def _ms(value: str) -> float:
    """wrk's '1.23ms' / '850.00us' / '1.02s' as milliseconds."""
    number, unit = _found(r"^([\d.]+)(us|ms|s|m)$", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(output: str) -> dict[str, float | int]:
    """Requests/s, p50/p99 latency and errors from `wrk --latency` output."""
    figures: dict[str, float | int] = {"requests_per_second": float(_found(r"Requests/sec:\s+([\d.]+)", output)[1])}
    for percent, key in (("50", "p50_ms"), ("90", "p90_ms"), ("99", "p99_ms")):
        figures[key] = round(_ms(_found(rf"^\s+{percent}%\s+(\S+)", output, re.MULTILINE)[1]), 3)
    figures["requests"] = int(_found(r"(\d+) requests in", output)[1])
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    figures["non_2xx"] = int(non_2xx[1]) if non_2xx else 0
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    figures["socket_errors"] = sum(int(n) for n in errors.groups()) if errors else 0
    return figures


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _database_server_pids() -> list[int]:
    """The local MariaDB/MySQL server's process ids (its CPU includes other clients' statements)."""
    found = subprocess.run(["pgrep", "-x", "mariadbd|mysqld"], capture_output=True, text=True).stdout
    return [int(pid) for pid in found.split()]


def _phase_cpu(server_pid: int, run: Callable[[], str]) -> tuple[str, dict[str, float]]:
    """Run a phase; also the CPU seconds its gunicorn workers and the database server spent meanwhile."""
    groups = {"workers": [server_pid, *_children(server_pid)], "database_server": _database_server_pids()}
    before = {name: sum(_cpu_seconds(pid) for pid in pids) for name, pids in groups.items()}
    output = run()
    return output, {
        name: round(sum(_cpu_seconds(pid) for pid in pids) - before[name], 2) for name, pids in groups.items()
    }


def _run_phase(command: list[str], server_pid: int, profile_dir: Path | None, phase: str) -> str:
    """wrk's output for one phase; with a profile dir, py-spy samples every worker meanwhile."""
    if profile_dir is None:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout
    seconds = command[command.index("-d") + 1].rstrip("s")
    py_spy = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(server_pid), "--subprocesses"]
    # --gil: only samples holding the GIL, i.e. the workers' Python CPU, not their waits on MySQL.
    py_spy += ["--gil", "--nonblocking", "--rate", str(PROFILE_RATE), "--duration", seconds, "--format", "raw"]
    py_spy += ["--output", str(profile_dir / f"api-profile-{phase}.txt")]
    sampler = subprocess.Popen(py_spy, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout
    finally:
        sampler.wait(60)


def _manage(checkout: Path, env: dict[str, str], *args: str) -> str:
    """Run `checkout`'s manage.py (its own code and migrations) and return what it printed."""
    command = [sys.executable, str(checkout / "manage.py"), *args]
    return subprocess.run(command, env=env, check=True, cwd=checkout, capture_output=True, text=True).stdout


def server_env(checkout: Path, database: str, *, tenant_throttle_rate: str = "") -> dict[str, str]:
    """The environment the API runs in for a measurement of `checkout`'s code on `database`."""
    from database.reachability import database_url_for

    env = {
        **os.environ,
        "DATABASE_URL": database_url_for(database),
        "TENANT_THROTTLE_RATE": tenant_throttle_rate,
        "THROTTLE_CACHE_URL": "dbcache://jobsched_throttle",  # the production default (migrate creates it)
        "EGRESS_ALLOWLIST": "127.0.0.1:18080",
        "SECURE_SSL_REDIRECT": "0",
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(checkout),
    }
    env.pop("DEBUG", None)
    return env


def measure(checkout: Path, database: str, args: argparse.Namespace, out_dir: Path, wrk: str) -> dict[str, object]:
    """One run of both phases against `checkout`'s code on `database`: wrk's figures and the CPU spent."""
    env = server_env(checkout, database, tenant_throttle_rate=args.tenant_throttle_rate)
    _manage(checkout, env, "ensure_database")
    _manage(checkout, env, "migrate", "--verbosity", "0")
    # Each run starts alike: no task, no tenant limits row; with --seed-active, the tenant's active tasks.
    _manage(checkout, env, "shell", "-c", SEED.format(tenant=BENCH_TENANT, count=args.seed_active))
    token = _manage(checkout, env, "issue_token", "--tenant", BENCH_TENANT).strip()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    gunicorn = [str(Path(sys.executable).parent / "gunicorn"), "jobsched_project.wsgi", "-b", f"127.0.0.1:{port}"]
    # Each checkout's own gunicorn.conf.py (read from the working directory) decides its logging, as in
    # production: an access log named here would make gunicorn write a line per request neither ships.
    gunicorn += ["-w", str(args.workers), "--error-logfile", "-"]
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "api-gunicorn.log", "wb") as log:
        server = subprocess.Popen(gunicorn, env=env, cwd=checkout, stdout=log, stderr=subprocess.STDOUT)
    result: dict[str, object] = {
        "checkout": str(checkout),
        "commit": subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"gunicorn did not start; see {out_dir / 'api-gunicorn.log'}") from None
                time.sleep(0.2)
        common = [wrk, "--latency", "--timeout", "30s", "-t", str(args.threads), "-c", str(args.connections)]
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(CREATE_SCRIPT.format(body=json.dumps(TASK_BODY), token=token))
        profile_dir = out_dir if args.profile else None
        one_task = _create_task(base, token)
        targets = {
            "create": ["-s", script.name, f"{base}/v1/tasks"],
            "list_limit_50": ["-H", f"Authorization: Bearer {token}", f"{base}/v1/tasks?limit=50"],
            "get_one": ["-H", f"Authorization: Bearer {token}", f"{base}/v1/tasks/{one_task}"],
        }
        try:
            if args.warmup:
                for target in targets.values():
                    subprocess.run([*common, "-d", f"{args.warmup}s", *target], capture_output=True, check=True)
            for phase in (*PHASES, *EXTRA_PHASES):
                command = [*common, "-d", f"{args.seconds}s", *targets[phase]]
                output, cpu = _phase_cpu(server.pid, partial(_run_phase, command, server.pid, profile_dir, phase))
                wrk_figures = parse_wrk(output)
                figures: dict[str, object] = {**wrk_figures, "cpu_seconds": cpu}
                figures["worker_cpu_ms_per_request"] = round(cpu["workers"] * 1000 / max(1, wrk_figures["requests"]), 2)
                if profile_dir is not None:
                    figures["profile"] = str(profile_dir / f"api-profile-{phase}.txt")
                result[phase] = figures
        finally:
            os.unlink(script.name)
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        server.terminate()
        server.wait(30)
    return result


def _create_task(base: str, token: str) -> str:
    """The id of a task made through the API for the one-task read."""
    request = urllib.request.Request(
        f"{base}/v1/tasks",
        data=json.dumps({**TASK_BODY, "name": "bench read"}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(json.load(answer)["id"])


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def verdicts(runs: list[dict[str, Any]], base_rates: dict[str, float]) -> dict[str, dict[str, object]]:
    """Each phase's median rate and p99 over `runs` beside the targets (TARGET_SPEEDUP x base rate, TARGET_P99_MS)."""
    summary: dict[str, dict[str, object]] = {}
    for phase in PHASES:
        rate = _median([run[phase]["requests_per_second"] for run in runs])
        p99 = _median([run[phase]["p99_ms"] for run in runs])
        base_rate = base_rates[phase]
        summary[phase] = {
            "requests_per_second": round(rate, 2),
            "base_requests_per_second": base_rate,
            "speedup": round(rate / base_rate, 2),
            "target_requests_per_second": round(TARGET_SPEEDUP * base_rate, 2),
            "rate_met": rate >= TARGET_SPEEDUP * base_rate,
            "p99_ms": p99,
            "target_p99_ms": TARGET_P99_MS,
            "p99_met": p99 <= TARGET_P99_MS,
        }
    return summary


def extra_speedups(runs: list[dict[str, Any]], base_runs: list[dict[str, Any]]) -> dict[str, dict[str, object]]:
    """Each extra phase's median rate and p99 beside the base's (runs without it, an older harness's, left out)."""
    summary: dict[str, dict[str, object]] = {}
    for phase in EXTRA_PHASES:
        ours = [run[phase] for run in runs if phase in run]
        theirs = [run[phase] for run in base_runs if phase in run]
        if not ours or not theirs:
            continue
        rate, base_rate = (_median([f["requests_per_second"] for f in group]) for group in (ours, theirs))
        summary[phase] = {
            "requests_per_second": round(rate, 2),
            "base_requests_per_second": round(base_rate, 2),
            "speedup": round(rate / base_rate, 2),
            "p99_ms": _median([f["p99_ms"] for f in ours]),
            "base_p99_ms": _median([f["p99_ms"] for f in theirs]),
        }
    return summary


def _print_verdicts(summary: dict[str, dict[str, Any]]) -> None:
    for phase, row in summary.items():
        print(
            f"{phase:>14}: {row['requests_per_second']:8.1f} req/s (base {row['base_requests_per_second']:.1f}, "
            f"x{row['speedup']:.2f}; target >= {row['target_requests_per_second']:.1f}: "
            f"{'met' if row['rate_met'] else 'NOT met'})  p99 {row['p99_ms']:.1f} ms "
            f"(target <= {row['target_p99_ms']:.0f}: {'met' if row['p99_met'] else 'NOT met'})"
        )


def _print_run(label: str, run: dict[str, Any]) -> None:
    figures = "  ".join(
        f"{phase} {run[phase]['requests_per_second']:.1f} req/s p50 {run[phase]['p50_ms']:.1f} "
        f"p99 {run[phase]['p99_ms']:.1f} ms cpu {run[phase]['worker_cpu_ms_per_request']:.1f} ms/req"
        for phase in (*PHASES, *EXTRA_PHASES)
        if phase in run
    )
    print(f"{label:>6} {run['commit']}: {figures}  load {run['load_average_before'][0]:.2f}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options, checked (`make bench` takes the defaults: `parse_args([])`)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10, help="per phase")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of each phase before measuring (0: none)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--database", default="jobsched_sysbench_api")
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    parser.add_argument("--base", type=Path, help="another checkout (the base commit) to measure interleaved")
    parser.add_argument("--rounds", type=int, default=2, help="with --base: runs of each checkout, alternating")
    parser.add_argument(
        "--reference",
        type=Path,
        default=ROOT / "docs" / "bench" / "api.json",
        help="without --base: the base figures the targets are relative to",
    )
    parser.add_argument(
        "--tenant-throttle-rate",
        default="",
        help="TENANT_THROTTLE_RATE of the server (default: off); e.g. 1000000/second counts every request in the "
        "throttle's database cache without refusing any, to measure what the throttle costs",
    )
    parser.add_argument(
        "--seed-active",
        type=int,
        default=0,
        help="active tasks the tenant has before the phases (a large tenant's create; TENANT_MAX_ACTIVE_TASKS is "
        "10,000 and the create phase adds about 2,500 at 250 a second)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the workers with py-spy during each phase (<out-dir>/api-profile-<phase>.txt, collapsed stacks)",
    )
    args = parser.parse_args(argv)
    if min(args.seconds, args.connections, args.threads, args.workers, args.rounds) < 1 or args.warmup < 0:
        parser.error("--seconds, --connections, --threads, --workers and --rounds must be positive")
    if args.seed_active < 0:
        parser.error("--seed-active: a number of tasks, 0 or more")
    if not args.database.replace("_", "").isalnum():
        parser.error(f"--database: bad name {args.database!r}")
    if args.base is not None and not (args.base / "manage.py").is_file():
        parser.error(f"--base: {args.base} is not a jobsched checkout")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wrk = shutil.which("wrk")
    if wrk is None:
        print("wrk is not installed: scripts/os-packages.sh bench installs it", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    out_dir = Path(args.out_dir)
    result: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "gunicorn_workers": args.workers,
        "wrk": {"threads": args.threads, "connections": args.connections, "seconds": args.seconds},
        "warmup_seconds": args.warmup,
        "tenant_throttle_rate": args.tenant_throttle_rate or None,
        "seeded_active_tasks": args.seed_active,
    }
    if args.base is None:
        run = measure(ROOT, args.database, args, out_dir, wrk)
        result.update(run)
        runs = [run]
        reference = json.loads(args.reference.read_text())
        base_rates = {phase: reference[phase]["requests_per_second"] for phase in PHASES}
        result["base"] = f"{args.reference} ({reference.get('date', 'undated')})"
    else:
        base_runs: list[dict[str, Any]] = []
        runs = []
        for round_number in range(1, args.rounds + 1):
            base_runs.append(measure(args.base.resolve(), f"{args.database}_base", args, out_dir / "base", wrk))
            _print_run(f"base {round_number}", base_runs[-1])
            runs.append(measure(ROOT, args.database, args, out_dir, wrk))
            _print_run(f"this {round_number}", runs[-1])
        base_rates = {phase: _median([run[phase]["requests_per_second"] for run in base_runs]) for phase in PHASES}
        result.update({"base": str(args.base), "base_runs": base_runs, "runs": runs})
        result["extras"] = extra_speedups(runs, base_runs)
    result["targets"] = verdicts(runs, base_rates)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "api.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    _print_verdicts(result["targets"])
    for phase, row in result.get("extras", {}).items():
        print(
            f"{phase:>14}: {row['requests_per_second']:8.1f} req/s (base {row['base_requests_per_second']:.1f}, "
            f"x{row['speedup']:.2f}; no target)  p99 {row['p99_ms']:.1f} ms (base {row['base_p99_ms']:.1f})"
        )
    every_run = runs + result.get("base_runs", [])
    phases = (*PHASES, *EXTRA_PHASES)
    bad = any(run[p]["non_2xx"] or run[p]["socket_errors"] for run in every_run for p in phases if p in run)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
