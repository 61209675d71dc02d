"""Where an API worker's CPU goes, by component: py-spy's collapsed stacks sorted into a table.

    python -m bench.api --profile --out-dir DIR     # samples each phase (GIL holders only)
    python -m bench.api_profile DIR/api-profile-create.txt --cpu-ms 12.3   # worker_cpu_ms_per_request

Each sample is charged to the component of its innermost frame that belongs to one: a log line
written inside the create use case counts as logging, a JSON encoder called by the renderer as
rendering, and a middleware only for its own code (not for the view it wraps).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

# (component, frame patterns): a frame is "function (file:line)" in py-spy's raw output.
COMPONENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("logging (access log, app log lines)", (r"\(logging/", r"jobsched_project/logs\.py", r"api/access_log\.py")),
    ("metrics (prometheus_client)", (r"prometheus_client/", r"api/prometheus\.py")),
    (
        "DB connection per request (health ping, connect, autocommit)",
        (r"close_if_health_check_failed", r"\bconnect \(django", r"ensure_connection", r"close_old_connections"),
    ),
    ("throttle (DRF throttle + its cache)", (r"throttling\.py", r"anonymous_throttle\.py \(spend", r"cache/backends/")),
    ("authentication (JWT verify)", (r"api/auth\.py", r"rest_framework_simplejwt/", r"\(jwt/")),
    ("create-time URL check (egress policy, DNS)", (r"tasks/targets\.py", r"outbound/egress/")),
    ("idempotency (key lookup, body digest)", (r"task_by_idempotency_key", r"request_sha256", r"task_replay")),
    ("active-task limit (tenant lock, count)", (r"tasks/limits\.py",)),
    ("create: insert + transaction", (r"task_create \(tasks/services\.py",)),
    ("validation (input serializer)", (r"_validate \(tasks/views\.py", r"model_fields \(tasks/serializers\.py")),
    ("list: query + rows", (r"task_page(_text)? \(tasks/selectors\.py",)),
    (
        "output (tasks/task_json.py, DRF before it)",
        (r"BaseSerializer\.data", r"ListSerializer\.data", r"_task_response", r"tasks/task_json\.py"),
    ),
    ("JSON render", (r"rendered_content", r"JSONRenderer")),
    ("request body parse", (r"api/parsers\.py", r"Request\._parse", r"Request\.data")),
    (
        "sessions/auth/csrf/messages middleware",
        (r"contrib/sessions/", r"contrib/auth/middleware", r"middleware/csrf\.py", r"contrib/messages/"),
    ),
    (
        "other middleware (security, whitenoise, common, proxies, probes, admin throttle)",
        (r"middleware/security", r"whitenoise/", r"middleware/common", r"clickjacking", r"api/proxies", r"api/probes"),
    ),
    ("URL resolving (and the urlconf's first import)", (r"urls/resolvers\.py",)),
    (
        "DRF dispatch (negotiation, permissions, Request)",
        (r"APIView\.", r"rest_framework/request\.py", r"rest_framework/negotiation", r"rest_framework/response"),
    ),
    ("Django handler, request and response objects", (r"django/core/handlers", r"django/http/")),
    ("gunicorn (HTTP parsing, socket writes)", (r"gunicorn/",)),
)
OTHER = "other"


_COMPILED = tuple((name, re.compile("|".join(patterns))) for name, patterns in COMPONENTS)


def component_of(stack: str) -> str:
    """The component of the innermost frame that belongs to one (ties: COMPONENTS' order)."""
    for frame in reversed(stack.split(";")):
        for name, pattern in _COMPILED:
            if pattern.search(frame):
                return name
    return OTHER


def breakdown(lines: list[str]) -> Counter[str]:
    """Samples per component from py-spy `--format raw` lines ("frame;frame;... count")."""
    samples: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            samples[component_of(stack)] += int(count)
    return samples


def table(samples: Counter[str], *, cpu_ms_per_request: float) -> str:
    """A Markdown table, largest first: each component's share of the samples, and that share of the
    workers' measured CPU per request (bench.api's worker_cpu_ms_per_request, from /proc)."""
    total = sum(samples.values())
    rows = ["| component | share | CPU ms / request |", "|---|---:|---:|"]
    for name, count in samples.most_common():
        rows.append(f"| {name} | {100 * count / total:.0f}% | {cpu_ms_per_request * count / total:.2f} |")
    rows.append(f"| **all (gunicorn workers)** | 100% | **{cpu_ms_per_request:.2f}** |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path, help="py-spy --format raw output")
    parser.add_argument(
        "--cpu-ms", type=float, required=True, help="the workers' CPU ms per request (bench.api's JSON)"
    )
    args = parser.parse_args(argv)
    samples = breakdown(args.profile.read_text().splitlines())
    print(table(samples, cpu_ms_per_request=args.cpu_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
