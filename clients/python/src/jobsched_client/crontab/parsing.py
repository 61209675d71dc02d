"""A standard crontab file as a list of HTTP tasks (pure: no API calls).

Understood: comments and blank lines; variable lines (`NAME=value`, quotes
allowed), of which `CRON_TZ` sets the time zone and `JOBSCHED_SECRET_REF` the
secret of the lines below it; five time fields or a nickname (@hourly ...);
cron's `%` (`\\%` is a literal percent sign; a bare one, cron's stdin marker,
is refused); the command as commands.py reads it. Each entry gets a key that
names it across edits: a comment `# jobsched: key=NAME` above it, else
its `METHOD URL` (`#2`, `#3` ... for repeats). Every line that cannot be
converted is reported with its number and the reason, all at once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from jobsched_client.crontab.commands import CommandError, HttpCommand, parse_command

NICKNAMES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
DEFAULT_TIMEZONE = "UTC"
TIMEZONE_VARIABLE = "CRON_TZ"
SECRET_VARIABLE = "JOBSCHED_SECRET_REF"
KEY_MAX_LENGTH = 120
_VARIABLE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)$")
_KEY_COMMENT = re.compile(r"^#\s*jobsched:\s*key\s*=\s*(?P<key>\S(?:.*\S)?)\s*$")
# Digits and * / , - #, croniter's L, and three-letter month and day names (a word like "curl" is not one).
_FIELD = re.compile(r"^(?:[0-9*/,#-]|L|[A-Za-z]{3})+$")
_LITERAL_PERCENT = "\x00"


@dataclass(frozen=True)
class LineProblem:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class CrontabError(ValueError):
    """Lines that cannot be converted; `problems` names each line and why."""

    def __init__(self, problems: list[LineProblem]):
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


@dataclass(frozen=True)
class CrontabEntry:
    line: int
    key: str
    cron: str
    timezone: str
    call: HttpCommand
    secret_ref: str | None = None


@dataclass(frozen=True)
class Crontab:
    entries: list[CrontabEntry]
    variables: dict[str, str] = field(default_factory=dict)


def derived_key(method: str, url: str, occurrence: int = 1) -> str:
    """The key of a line without an explicit one: `METHOD URL`, `#n` for its n-th repeat, long ones hashed."""
    key = f"{method} {url}" + (f" #{occurrence}" if occurrence > 1 else "")
    if len(key) <= KEY_MAX_LENGTH:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"{key[: KEY_MAX_LENGTH - 13]}~{digest}"


def parse_crontab(text: str, *, default_timezone: str = DEFAULT_TIMEZONE) -> Crontab:
    """Read a crontab; raise CrontabError listing every line it cannot convert."""
    entries: list[CrontabEntry] = []
    problems: list[LineProblem] = []
    variables: dict[str, str] = {}
    timezone, secret_ref = default_timezone, None
    explicit_key: str | None = None
    seen_keys: dict[str, int] = {}
    repeats: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            if match := _KEY_COMMENT.match(line):
                explicit_key = match["key"]  # for the next entry, other comments in between
            continue
        if variable := _VARIABLE.match(line):
            value = _unquote(variable["value"])
            variables[variable["name"]] = value
            if variable["name"] == TIMEZONE_VARIABLE:
                timezone = value or default_timezone
            elif variable["name"] == SECRET_VARIABLE:
                secret_ref = value or None
            continue
        key_given, explicit_key = explicit_key, None
        try:
            cron, command = _split_schedule(line)
            call = parse_command(_cron_percent(command))
        except (CommandError, ValueError) as exc:
            problems.append(LineProblem(number, str(exc)))
            continue
        if key_given is not None:
            if len(key_given) > KEY_MAX_LENGTH:
                problems.append(LineProblem(number, f"key longer than {KEY_MAX_LENGTH} characters"))
                continue
            key = key_given
        else:
            occurrence = repeats[(call.method, call.url)] = repeats.get((call.method, call.url), 0) + 1
            key = derived_key(call.method, call.url, occurrence)
        if key in seen_keys:
            problems.append(LineProblem(number, f"key {key!r} is also line {seen_keys[key]}'s"))
            continue
        seen_keys[key] = number
        entries.append(CrontabEntry(number, key, cron, timezone, call, secret_ref))
    if problems:
        raise CrontabError(problems)
    return Crontab(entries, variables)


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _split_schedule(line: str) -> tuple[str, str]:
    if line.startswith("@"):
        nickname, _, command = line.partition(" ")
        if nickname.lower() == "@reboot":
            raise ValueError("@reboot has no meaning for a hosted scheduler")
        if nickname.lower() not in NICKNAMES:
            raise ValueError(f"unknown nickname {nickname!r} (known: {', '.join(NICKNAMES)})")
        if not command.strip():
            raise ValueError("no command after the schedule")
        return nickname.lower(), command.strip()
    parts = line.split(maxsplit=5)
    if len(parts) < 6:
        raise ValueError("expected five time fields (minute hour day month weekday) and a command")
    if bad := [part for part in parts[:5] if not _FIELD.match(part)]:
        raise ValueError(f"{bad[0]!r} is not a cron time field")
    return " ".join(parts[:5]), parts[5]


def _cron_percent(command: str) -> str:
    """cron turns a bare `%` into a newline (the rest is stdin) and `\\%` into `%`."""
    escaped = command.replace("\\%", _LITERAL_PERCENT)
    if "%" in escaped:
        raise ValueError("a bare % is cron's stdin marker; write \\% for a percent sign")
    return escaped.replace(_LITERAL_PERCENT, "%")
