"""A create's, a one-task read's and an edit's CPU in one process, no server: two checkouts interleaved.

    python -m bench.api_cpu --base /path/to/other/checkout [--rounds 6] [--requests 1000]

`bench.api` measures the API as tenants meet it, but on this 2-core machine its rates move
with the machine's speed from minute to minute. This measures only what a request costs the
process that answers it: each round runs `--requests` creates (the body `bench.api` posts)
through each checkout's `jobsched_project.wsgi.application` in a process of its own, after 50
not counted, then as many reads of the last task made (`GET /v1/tasks/{id}`) and edits of it
(a PATCH renaming it, under `If-Match`), and records the process's CPU per request of each
kind (`time.process_time`; the database server's work is not in it). Each checkout runs its
own code and migrations on its own database (`<database>` and `<database>_base`), emptied of
tasks and tenant limits first, with the settings `bench.api` gives gunicorn. Every create must
be a 201, and every read and edit a 200. Prints each round and the medians; writes
`<out-dir>/api-cpu.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.api import BENCH_TENANT, SEED, TASK_BODY, _manage, server_env

ROOT = Path(__file__).resolve().parent.parent

# Run in the measured checkout's process: its settings, its code, one tenant's token.
CHILD = """
import io, json, sys, time, urllib.parse
from jobsched_project.wsgi import application
from django.core.management import call_command

out = io.StringIO()
call_command("issue_token", "--tenant", {tenant!r}, stdout=out)
token = out.getvalue().strip()
body = {body!r}.encode()
answers = []


def send(method, path, data=b"", **extra):
    environ = {{
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1:8000", "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data)), "CONTENT_TYPE": "application/json",
        "HTTP_AUTHORIZATION": "Bearer " + token, "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
        **extra,
    }}
    b"".join(application(environ, lambda status, headers, exc_info=None: answers.append((status, dict(headers)))))


# CPU ms per request(n) after 50 not counted, and the answers' statuses that are not `expected`.
def cpu_ms(request, expected):
    first = len(answers)
    for n in range(50):
        request(n)
    started = time.process_time()
    for n in range({requests}):
        request(n)
    spent = (time.process_time() - started) * 1000 / {requests}
    return spent, [status for status, _ in answers[first:] if not status.startswith(expected)]


# An edit renames the task, back and forth, under If-Match of the answer before it.
NAMES = [b'{{"name": "bench edit a"}}', b'{{"name": "bench edit b"}}']
figures = {{"cpu_ms_per_create": 0.0, "cpu_ms_per_read": 0.0, "cpu_ms_per_edit": 0.0}}
figures["cpu_ms_per_create"], refused = cpu_ms(lambda n: send("POST", "/v1/tasks", body), "201")
if not refused:
    task = urllib.parse.urlsplit(answers[-1][1]["Location"]).path
    figures["cpu_ms_per_read"], refused = cpu_ms(lambda n: send("GET", task), "200")
if not refused:
    edit = lambda n: send("PATCH", task, NAMES[n % 2], HTTP_IF_MATCH=answers[-1][1]["ETag"])
    figures["cpu_ms_per_edit"], refused = cpu_ms(edit, "200")
print(json.dumps({{**figures, "refused": len(refused), "first": refused[:1]}}))
"""


def measure(checkout: Path, database: str, requests: int) -> dict[str, Any]:
    """One round on `checkout`: its process's CPU per create, read and edit."""
    env = server_env(checkout, database)
    _manage(checkout, env, "ensure_database")
    _manage(checkout, env, "migrate", "--verbosity", "0")
    _manage(checkout, env, "shell", "-c", SEED.format(tenant=BENCH_TENANT, count=0))
    child = CHILD.format(tenant=BENCH_TENANT, body=json.dumps(TASK_BODY), requests=requests)
    answer = subprocess.run(
        [sys.executable, "-c", child], env=env, cwd=checkout, check=True, capture_output=True, text=True
    )
    figures = json.loads(answer.stdout.strip().splitlines()[-1])
    if figures["refused"]:
        raise RuntimeError(f"{checkout}: {figures['refused']} answers were not 201/200 (first: {figures['first']})")
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return {
        "checkout": str(checkout),
        "commit": commit.stdout.strip(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpu_ms_per_create": round(figures["cpu_ms_per_create"], 3),
        "cpu_ms_per_read": round(figures["cpu_ms_per_read"], 3),
        "cpu_ms_per_edit": round(figures["cpu_ms_per_edit"], 3),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout, measured interleaved")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--requests", type=int, default=1000, help="creates a round (under the 10,000 active-task limit)"
    )
    parser.add_argument("--database", default="jobsched_sysbench_api_cpu")
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    args = parser.parse_args(argv)
    if args.rounds < 1 or not 1 <= args.requests <= 9000:
        parser.error("--rounds must be positive and --requests within 1..9000")
    if not args.database.replace("_", "").isalnum():
        parser.error(f"--database: bad name {args.database!r}")
    if not (args.base / "manage.py").is_file():
        parser.error(f"--base: {args.base} is not a jobsched checkout")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    base_runs: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for round_number in range(1, args.rounds + 1):
        base_runs.append(measure(args.base.resolve(), f"{args.database}_base", args.requests))
        runs.append(measure(ROOT, args.database, args.requests))
        print(
            f"round {round_number}: base {base_runs[-1]['cpu_ms_per_create']:.3f} ms, "
            f"this {runs[-1]['cpu_ms_per_create']:.3f} ms a create; base {base_runs[-1]['cpu_ms_per_read']:.3f} ms, "
            f"this {runs[-1]['cpu_ms_per_read']:.3f} ms a read; base {base_runs[-1]['cpu_ms_per_edit']:.3f} ms, "
            f"this {runs[-1]['cpu_ms_per_edit']:.3f} ms an edit",
            flush=True,
        )
    result: dict[str, Any] = {"requests_per_round": args.requests, "base_runs": base_runs, "runs": runs}
    for what in ("create", "read", "edit"):
        base_median = statistics.median(run[f"cpu_ms_per_{what}"] for run in base_runs)
        median = statistics.median(run[f"cpu_ms_per_{what}"] for run in runs)
        result[f"base_median_cpu_ms_per_{what}"] = round(base_median, 3)
        result[f"median_cpu_ms_per_{what}"] = round(median, 3)
        result[f"{what}_change"] = round(median / base_median - 1, 3)
        print(
            f"median CPU per {what}: base {base_median:.3f} ms, this {median:.3f} ms ({median / base_median - 1:+.1%})"
        )
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "api-cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
