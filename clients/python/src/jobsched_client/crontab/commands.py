"""A crontab line's command as an HTTP call: `curl ...` or plain `METHOD URL [BODY]` (pure).

Words are split as a POSIX shell would (`shlex`, shell operators kept apart),
so quoting means what it means in cron's /bin/sh. What a shell would do beyond
splitting (expansion, pipes, several commands) has no HTTP equivalent and is
refused with the reason, never guessed.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"  # what curl sends with -d and no Content-Type
JSON_CONTENT_TYPE = "application/json"
# Output-only flags: they change what curl prints, not the request.
_QUIET_FLAGS = {"-s", "--silent", "-S", "--show-error", "-f", "--fail", "--fail-with-body", "-q", "--disable"}
_QUIET_SHORT = set("sSfq")
_DATA_OPTIONS = {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii"}
_VALUE_OPTIONS = (
    _DATA_OPTIONS
    | {"-X", "--request", "-H", "--header", "-m", "--max-time", "--retry", "--url", "--json"}
    | {
        "-o",
        "--output",
    }
)
# "> /dev/null 2>&1" and the like at the end: cron mails output, we have nowhere to send it anyway.
_REDIRECT_TAIL = re.compile(r"(?:\s+(?:[12]?>>?\s*/dev/null|&>>?\s*/dev/null|[12]?>&[12]))+\s*$")
_SHELL_OPERATOR = re.compile(r"^[();<>|&]+$")
CREDENTIALS_HINT = "store the credential as a secret (jobsched secrets put NAME) and set JOBSCHED_SECRET_REF=NAME above"


class CommandError(ValueError):
    """The command is not an HTTP call this converter understands; the message says why."""


@dataclass(frozen=True)
class HttpCommand:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    timeout_seconds: int | None = None
    max_attempts: int | None = None


def parse_command(command: str) -> HttpCommand:
    """Read a crontab command (after cron's `%` handling) as one HTTP call, or raise CommandError."""
    _refuse_expansion(command)
    text = _REDIRECT_TAIL.sub("", command)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:  # "No closing quotation"
        raise CommandError(f"cannot split the command: {exc}") from None
    if not words:
        raise CommandError("empty command")
    if operators := [word for word in words if _SHELL_OPERATOR.match(word)]:
        raise CommandError(f"shell operator {operators[0]!r}: one HTTP call per line, no pipes, lists or redirections")
    program = words[0].rsplit("/", 1)[-1]
    if program == "curl":
        return _parse_curl(words[1:])
    if words[0].upper() in METHODS:
        return _parse_plain(words)
    raise CommandError(f"{words[0]!r} is not an HTTP call: write `curl ... URL` or `METHOD URL [BODY]`")


def _refuse_expansion(command: str) -> None:
    """`$VAR`, `$(...)` and backticks would be expanded by the shell; we have no shell."""
    quote: str | None = None
    escaped = False
    for char in command:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is not None and char == quote:
            quote = None
        elif quote is None and char in "'\"":
            quote = char
        elif quote != "'" and char in "$`":
            raise CommandError(f"shell expansion ({char}) is not supported: write the value itself")


def _parse_plain(words: list[str]) -> HttpCommand:
    if len(words) not in (2, 3):
        raise CommandError("plain form is `METHOD URL [BODY]` (quote a body with spaces)")
    return HttpCommand(method=words[0].upper(), url=_url(words[1]), body=words[2] if len(words) == 3 else "")


def _url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise CommandError(f"{text!r} is not an http(s) URL")
    return text


def _take_value(words: list[str], index: int, option: str) -> str:
    if index + 1 >= len(words):
        raise CommandError(f"curl option {option} needs a value")
    return words[index + 1]


def _split_attached(word: str) -> tuple[str, str | None]:
    """`-XPOST` -> ("-X", "POST"); other words unchanged."""
    if len(word) > 2 and word[0] == "-" and word[1] in "XHdm" and word[1] != "-":
        return word[:2], word[2:]
    return word, None


def _parse_curl(words: list[str]) -> HttpCommand:
    method: str | None = None
    urls: list[str] = []
    headers: dict[str, str] = {}
    data: list[str] = []
    timeout: int | None = None
    attempts: int | None = None
    removed: set[str] = set()
    index = 0
    while index < len(words):
        option, value = _split_attached(words[index])
        if value is None and option in _VALUE_OPTIONS:
            value = _take_value(words, index, option)
            index += 1
        index += 1
        if option in ("-X", "--request"):
            method = str(value).upper()
        elif option in ("-H", "--header"):
            name, sep, header_value = str(value).partition(":")
            if not sep or not name.strip():
                raise CommandError(f"header {value!r} is not `Name: value`")
            _check_header(name.strip())
            if header_value.strip():
                headers[name.strip()] = header_value.strip()
            else:  # curl: `-H "Name:"` removes the header, its own default included
                removed.add(name.strip().lower())
                headers.pop(name.strip(), None)
        elif option in _DATA_OPTIONS:
            if str(value).startswith("@") and option != "--data-raw":
                raise CommandError(f"{option} {value}: a body read from a file is not supported; write it inline")
            data.append(str(value))
        elif option == "--json":
            data.append(str(value))
            headers.setdefault("Content-Type", JSON_CONTENT_TYPE)
            headers.setdefault("Accept", JSON_CONTENT_TYPE)
        elif option in ("-m", "--max-time"):
            timeout = _number(option, str(value), rounding=math.ceil)
        elif option == "--retry":
            attempts = _number(option, str(value), rounding=int) + 1
        elif option in ("-o", "--output"):
            if value != "/dev/null":
                raise CommandError(f"{option} {value}: only /dev/null (the answer is kept in the job's history)")
        elif option == "--url":
            urls.append(_url(str(value)))
        elif option in _QUIET_FLAGS or (
            option.startswith("-") and not option.startswith("--") and set(option[1:]) <= _QUIET_SHORT
        ):
            pass
        elif option in ("-u", "--user", "-b", "--cookie", "-A", "--user-agent", "-e", "--referer"):
            hint = CREDENTIALS_HINT if option in ("-u", "--user", "-b", "--cookie") else "the executor sets it"
            raise CommandError(f"curl option {option} is not supported: {hint}")
        elif option.startswith("-"):
            raise CommandError(
                f"curl option {option} is not supported (supported: -X, -H, -d/--data/--data-raw/--data-binary, "
                "--json, -m/--max-time, --retry, --url, -o /dev/null, -s, -S, -f)"
            )
        else:
            urls.append(_url(option))
    if len(urls) != 1:
        raise CommandError("curl needs exactly one URL" if not urls else "one URL per line (curl was given several)")
    body = "&".join(data)  # curl joins several -d with "&"
    if data and "content-type" not in removed and not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = FORM_CONTENT_TYPE
    return HttpCommand(
        method=method or ("POST" if data else "GET"),
        url=urls[0],
        headers=headers,
        body=body,
        timeout_seconds=timeout,
        max_attempts=attempts,
    )


def _check_header(name: str) -> None:
    lower = name.lower()
    if lower in ("authorization", "cookie", "proxy-authorization"):
        raise CommandError(f"header {name}: {CREDENTIALS_HINT}")
    if lower == "user-agent":
        raise CommandError("header User-Agent: the executor sets it")


def _number(option: str, text: str, *, rounding) -> int:
    try:
        number = float(text)
    except ValueError:
        raise CommandError(f"curl option {option} needs a number, not {text!r}") from None
    if not math.isfinite(number) or number < 0:
        raise CommandError(f"curl option {option} needs a positive number, not {text!r}")
    return int(rounding(number))
