"""The reverse of apply: a crontab's tasks written back as a crontab file (pure).

The output parses back to the same tasks (applying it changes nothing): each
call is written in the curl form, `%` escaped for cron, and a key comment is
written only where the key is not the one the line would derive by itself.
"""

from __future__ import annotations

import re
import shlex

from jobsched_client.crontab.commands import FORM_CONTENT_TYPE
from jobsched_client.crontab.parsing import SECRET_VARIABLE, TIMEZONE_VARIABLE, derived_key
from jobsched_client.models import Task

_REPEAT = re.compile(r"^(?P<base>.*) #(?P<n>[0-9]+)$")


def curl_command(task: Task, *, default_timeout: int | None, default_attempts: int | None) -> str:
    """The task's call as a curl command line (quoted for /bin/sh, `%` escaped for cron)."""
    http = task.http
    words = ["curl", "-fsS"]
    headers = dict(http.headers)
    content_type = next((name for name in headers if name.lower() == "content-type"), None)
    if http.body and content_type is None:
        words += ["-H", "Content-Type:"]  # curl would add its form type with -d; this says "none"
    elif http.body and content_type is not None and headers[content_type] == FORM_CONTENT_TYPE:
        del headers[content_type]  # curl sends it by itself with -d
    implied = "POST" if http.body else "GET"
    if http.method != implied:
        words += ["-X", http.method]
    for name, value in headers.items():
        words += ["-H", f"{name}: {value}"]
    if http.body:
        words += ["--data-raw" if http.body.startswith("@") else "-d", http.body]
    if task.timeout_seconds != default_timeout:
        words += ["-m", str(task.timeout_seconds)]
    if task.max_attempts != default_attempts:
        words += ["--retry", str(task.max_attempts - 1)]
    words.append(http.url)
    return " ".join(shlex.quote(word) for word in words).replace("%", "\\%")


def _order(item: tuple[str, Task]) -> tuple[str, int]:
    key = item[0]
    match = _REPEAT.match(key)
    return (match["base"], int(match["n"])) if match else (key, 1)


def export_crontab(
    tasks: dict[str, Task], *, label: str, default_timeout: int | None = None, default_attempts: int | None = None
) -> str:
    """A crontab for `tasks` (key -> task) of the crontab `label`; one-shot tasks are listed as comments."""
    lines = [f"# jobsched crontab {label!r}: `jobsched crontab apply --name {label} FILE` syncs it"]
    timezone: str | None = None
    secret_ref: str | None = None
    occurrences: dict[tuple[str, str], int] = {}
    for key, task in sorted(tasks.items(), key=_order):
        if task.schedule.cron is None:
            lines.append(f"# skipped {key!r}: a one-shot task (run_at) has no crontab form")
            continue
        if task.schedule.timezone != timezone:
            timezone = task.schedule.timezone
            lines.append(f"{TIMEZONE_VARIABLE}={timezone}")
        if task.secret_ref != secret_ref:
            secret_ref = task.secret_ref
            lines.append(f"{SECRET_VARIABLE}={secret_ref or ''}")
        call = (task.http.method, task.http.url)
        occurrences[call] = occurrences.get(call, 0) + 1
        if key != derived_key(*call, occurrences[call]):
            lines.append(f"# jobsched: key={key}")
        if task.status == "paused":
            lines.append("# (paused in jobsched)")
        command = curl_command(task, default_timeout=default_timeout, default_attempts=default_attempts)
        lines.append(f"{task.schedule.cron} {command}")
    return "\n".join(lines) + "\n"
