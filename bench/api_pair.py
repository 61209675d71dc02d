"""Two checkouts' API served at once, wrk's phase alternating between them: a paired comparison.

    python -m bench.api_pair --base /path/to/other/checkout [--phase create] [--rounds 8] [--seconds 5]

`bench.api --base` serves one checkout at a time for a minute each; the machine's speed moves by
tens of percent over that time, more than a change of a tenth shows. Here both checkouts' gunicorn
(3 sync workers each, their own databases `<database>_0` and `<database>_1`, the harness's server
environment, no task limit in the way: TENANT_MAX_ACTIVE_TASKS is raised) are up together, and
each round runs wrk for `--seconds` on one then the other, the order swapped every round. Each
round's ratio (this checkout's rate over the base's) is taken while the machine ran at one speed;
their median is the figure. Prints a line a round and writes `<out-dir>/api-pair.json`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench import api

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("create", "list_limit_50", "get_one")


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def paired_summary(ours: list[dict[str, Any]], base: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of the rounds' ratios (ours / base) and each side's median figures."""
    ratios = [
        mine["requests_per_second"] / theirs["requests_per_second"] for mine, theirs in zip(ours, base, strict=True)
    ]
    summary: dict[str, Any] = {
        "rounds": len(ratios),
        "median_ratio": round(_median(ratios), 3),
        "ratios": [round(ratio, 3) for ratio in ratios],
    }
    for name, runs in (("this", ours), ("base", base)):
        summary[name] = {
            key: round(_median([run[key] for run in runs]), 3)
            for key in ("requests_per_second", "p99_ms", "worker_cpu_ms_per_request", "database_cpu_ms_per_request")
        }
        summary[name]["non_2xx"] = sum(run["non_2xx"] for run in runs)
    return summary


def _serve(checkout: Path, database: str, out_dir: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    env = api.server_env(checkout, database)
    env["TENANT_MAX_ACTIVE_TASKS"] = "100000000"  # rounds of creates add up past the default limit
    api._manage(checkout, env, "ensure_database")
    api._manage(checkout, env, "migrate", "--verbosity", "0")
    api._manage(checkout, env, "shell", "-c", api.SEED.format(tenant=api.BENCH_TENANT, count=0))
    token = api._manage(checkout, env, "issue_token", "--tenant", api.BENCH_TENANT).strip()
    port = api._free_port()
    command = [str(Path(sys.executable).parent / "gunicorn"), "jobsched_project.wsgi", "-b", f"127.0.0.1:{port}"]
    command += ["-w", "3", "--error-logfile", "-"]
    with open(out_dir / f"api-pair-{database}.log", "wb") as log:
        server = subprocess.Popen(command, env=env, cwd=checkout, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            api._create_task(base, token)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start; see {out_dir}") from None
            time.sleep(0.2)
    return server, base, token


def _wrk(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _target(phase: str, base: str, token: str, script: str) -> list[str]:
    if phase == "create":
        return ["-s", script, f"{base}/v1/tasks"]
    if phase == "list_limit_50":
        return ["-H", f"Authorization: Bearer {token}", f"{base}/v1/tasks?limit=50"]
    return ["-H", f"Authorization: Bearer {token}", f"{base}/v1/tasks/{api._create_task(base, token)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout (e.g. a git worktree)")
    parser.add_argument("--phase", choices=PHASES, default="create")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=5, help="wrk's run on each checkout in a round")
    parser.add_argument("--database", default="jobsched_sysbench_pair")
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    args = parser.parse_args()
    wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("wrk is not installed (scripts/os-packages.sh bench)")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    checkouts = {"this": ROOT, "base": args.base.resolve()}
    servers: dict[str, tuple[subprocess.Popen[bytes], str, str]] = {}
    targets: dict[str, list[str]] = {}
    common = [wrk, "--latency", "--timeout", "30s", "-t", "2", "-c", "16"]
    with tempfile.TemporaryDirectory() as scratch:
        try:
            for number, (name, checkout) in enumerate(checkouts.items()):
                servers[name] = server, base, token = _serve(checkout, f"{args.database}_{number}", out_dir)
                script = Path(scratch) / f"{name}.lua"
                script.write_text(api.CREATE_SCRIPT.format(body=json.dumps(api.TASK_BODY), token=token))
                targets[name] = _target(args.phase, base, token, str(script))
                subprocess.run([*common, "-d", "2s", *targets[name]], capture_output=True, check=True)  # warm up
            runs: dict[str, list[dict[str, Any]]] = {"this": [], "base": []}
            for number in range(args.rounds):
                for name in ("this", "base") if number % 2 == 0 else ("base", "this"):
                    command = [*common, "-d", f"{args.seconds}s", *targets[name]]
                    output, cpu = api._phase_cpu(servers[name][0].pid, partial(_wrk, command))
                    figures: dict[str, Any] = dict(api.parse_wrk(output))
                    requests = max(1, int(figures["requests"]))
                    figures["worker_cpu_ms_per_request"] = round(cpu["workers"] * 1000 / requests, 3)
                    figures["database_cpu_ms_per_request"] = round(cpu["database_server"] * 1000 / requests, 3)
                    runs[name].append(figures)
                mine, theirs = runs["this"][-1]["requests_per_second"], runs["base"][-1]["requests_per_second"]
                print(f"round {number + 1}: this {mine:.1f}/s, base {theirs:.1f}/s, x{mine / theirs:.3f}", flush=True)
        finally:
            for server, _, _ in servers.values():
                server.terminate()
                server.wait(30)
    commits = {
        name: subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        for name, path in checkouts.items()
    }
    result = {
        "phase": args.phase,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commits": commits,
        "seconds_per_run": args.seconds,
        "summary": paired_summary(runs["this"], runs["base"]),
        "runs": runs,
    }
    (out_dir / "api-pair.json").write_text(json.dumps(result, indent=2) + "\n")
    summary = result["summary"]
    rates = f"this {summary['this']['requests_per_second']}/s, base {summary['base']['requests_per_second']}/s"
    spread = f"{min(summary['ratios'])}-{max(summary['ratios'])}"
    print(f"{args.phase}: {rates}; median of the rounds' ratios x{summary['median_ratio']} ({spread})")


if __name__ == "__main__":
    main()
