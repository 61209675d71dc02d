"""Write the development `.env` that `make run` leaves behind (`make dev-env`).

manage.py reads it (django-environ, `os.environ` first) whenever DJANGO_SETTINGS_MODULE is
not set, so every command works in a plain shell after one `make run`: DEBUG on, the
database `make run` used, the API's and the development receiver's URLs (also for
`. ./.env` in a shell) and development keys. The receiver's EGRESS_ALLOWLIST entry is not
here: `run_dev` gives it to the processes it starts, and every other command would log the
allowlist's loud warning (an EGRESS_ALLOWLIST set for `make run` is kept, as are
HISTORY_BACKEND and CASSANDRA_HOSTS).

The URLs and DEBUG are rewritten on every run (they follow the make
variables); the keys are made once and kept, so tokens and stored secrets survive a
restart; any other line is kept as it is. Standard library only: it runs before Django
can start. Development only: the file is ignored by git and never read by gunicorn.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import secrets
from pathlib import Path

DEFAULT_DATABASE_URL = "mysql://root@127.0.0.1:3306/jobsched"
HEADER = "# Development settings written by `make run` (scripts/dev_env.py); ignored by git. Lines you add are kept."
_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _quote(value: str) -> str:
    """Single quotes: read alike by django-environ and by a POSIX shell (`. ./.env`)."""
    if "'" in value:
        raise ValueError("a value with a single quote cannot be written to .env")
    return f"'{value}'"


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


def _generated_keys() -> dict[str, str]:
    return {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "JWT_VERIFYING_KEY": secrets.token_urlsafe(48),
        # A Fernet key is 32 random bytes, URL-safe base64.
        "SECRETS_ENCRYPTION_KEYS": base64.urlsafe_b64encode(os.urandom(32)).decode(),
    }


def managed_values(*, api_port: int, receiver_port: int, environ: dict[str, str]) -> dict[str, str]:
    """What this run of `make run` says: rewritten on every run."""
    values = {
        "DEBUG": "1",
        "DATABASE_URL": environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL,
        "JOBSCHED_API_URL": f"http://127.0.0.1:{api_port}",
    }
    if receiver_port:
        values["JOBSCHED_RECEIVER_URL"] = f"http://127.0.0.1:{receiver_port}"
    for name in ("HISTORY_BACKEND", "CASSANDRA_HOSTS", "EGRESS_ALLOWLIST"):
        if environ.get(name):
            values[name] = environ[name]
    return values


def render(existing: str, managed: dict[str, str]) -> str:
    """The new file: managed values replaced or added, keys kept (or made), every other line kept."""
    lines = [line for line in existing.splitlines() if line != HEADER]
    seen: set[str] = set()
    out = [HEADER]
    for line in lines:
        match = _LINE.match(line.strip())
        if match and match.group(1) in managed:
            name = match.group(1)
            if name not in seen:
                out.append(f"{name}={_quote(managed[name])}")
                seen.add(name)
            continue
        if match:
            seen.add(match.group(1))
        out.append(line)
    for name, value in {**managed, **_generated_keys()}.items():
        if name not in seen:
            out.append(f"{name}={_quote(value)}")
            seen.add(name)
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", default=".env", help="the file to write (default .env)")
    parser.add_argument("--api-port", type=int, default=8000, help="the port make run's API listens on")
    parser.add_argument("--receiver-port", type=int, default=9911, help="the development receiver's port (0: none)")
    args = parser.parse_args()
    path = Path(args.file)
    existing = path.read_text() if path.exists() else ""
    managed = managed_values(api_port=args.api_port, receiver_port=args.receiver_port, environ=dict(os.environ))
    text = render(existing, managed)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(0o600)  # development keys, still keys
    tmp.replace(path)
    print(f"dev-env: wrote {path} (DEBUG=1, DATABASE_URL, the API and receiver URLs, development keys)")


if __name__ == "__main__":
    main()
