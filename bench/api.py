"""The tenant API under gunicorn: task create and list rates with p50/p99 latency, measured by wrk.

    python -m bench.api [--seconds 10] [--connections 16] [--workers 3]

On its own database (default `jobsched_sysbench_api`, created and migrated,
its tasks emptied), it starts `gunicorn jobsched_project.wsgi` on a loopback
port (DEBUG off, per-tenant throttle off so the server is what is measured),
issues one tenant's token, then runs wrk (Debian's `wrk`, installed by
scripts/os-packages.sh bench): `POST /v1/tasks` (a cron task in a zone, each
request creating one) and then `GET /v1/tasks?limit=50` (newest first, the
first page of the tasks just created). Writes `<out-dir>/api.json`. wrk runs on
the same machine, so it takes part of the cores it measures.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK_BODY = {
    "name": "bench task",
    "schedule": {"cron": "*/5 * * * *", "timezone": "Europe/Madrid"},
    "http": {"url": "http://127.0.0.1:18080/hook", "method": "POST", "headers": {"X-Bench": "1"}, "body": "{}"},
}
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10, help="per phase")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn sync workers")
    parser.add_argument("--database", default="jobsched_sysbench_api")
    parser.add_argument("--out-dir", default=str(ROOT / ".bench"))
    args = parser.parse_args(argv)
    if min(args.seconds, args.connections, args.threads, args.workers) < 1:
        parser.error("--seconds, --connections, --threads and --workers must be positive")
    if not args.database.replace("_", "").isalnum():
        parser.error(f"--database: bad name {args.database!r}")
    wrk = shutil.which("wrk")
    if wrk is None:
        print("wrk is not installed: scripts/os-packages.sh bench installs it", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from bench.database import use_database
    from database.reachability import database_url_for

    env = {
        **os.environ,
        "DATABASE_URL": database_url_for(args.database),
        "TENANT_THROTTLE_RATE": "",
        "EGRESS_ALLOWLIST": "127.0.0.1:18080",
        "SECURE_SSL_REDIRECT": "0",
        "LOG_LEVEL": "WARNING",
    }
    env.pop("DEBUG", None)
    use_database(args.database)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run(
        [*manage, "shell", "-c", "from tasks.models import Task; Task.objects.all().delete()"],
        env=env,
        check=True,
        cwd=ROOT,
    )
    tenant = "bench-api"
    token = subprocess.run(
        [*manage, "issue_token", "--tenant", tenant], env=env, check=True, cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    gunicorn = [str(Path(sys.executable).parent / "gunicorn"), "jobsched_project.wsgi", "-b", f"127.0.0.1:{port}"]
    gunicorn += ["-w", str(args.workers), "--access-logfile", "/dev/null", "--error-logfile", "-"]
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "api-gunicorn.log", "wb") as log:
        server = subprocess.Popen(gunicorn, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "gunicorn_workers": args.workers,
        "wrk": {"threads": args.threads, "connections": args.connections, "seconds": args.seconds},
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
        common += ["-d", f"{args.seconds}s"]
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(CREATE_SCRIPT.format(body=json.dumps(TASK_BODY), token=token))
        try:
            create = subprocess.run(
                [*common, "-s", script.name, f"{base}/v1/tasks"], capture_output=True, text=True, check=True
            ).stdout
        finally:
            os.unlink(script.name)
        listing = subprocess.run(
            [*common, "-H", f"Authorization: Bearer {token}", f"{base}/v1/tasks?limit=50"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        result["create"] = parse_wrk(create)
        result["list_limit_50"] = parse_wrk(listing)
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        server.terminate()
        server.wait(30)
    (out_dir / "api.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    bad = any(result[phase]["non_2xx"] or result[phase]["socket_errors"] for phase in ("create", "list_limit_50"))  # type: ignore[index]  # result's values are the dicts parse_wrk returned
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
