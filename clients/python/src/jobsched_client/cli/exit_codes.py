"""The `jobsched` command's exit codes: one per kind of failure, so scripts can branch on them.

docs/cli.md's table is generated from `EXIT_CODES`.
"""

from __future__ import annotations

from jobsched_client.errors import (
    ApiError,
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    JobschedError,
    NotFound,
    PreconditionRequired,
    RateLimited,
    ServerError,
    TransportError,
    Unauthorized,
    ValidationFailed,
)

OK = 0
ERROR = 1
USAGE = 2
NOT_FOUND = 3
CONFLICT = 4
INVALID = 5
AUTH = 6
UNAVAILABLE = 7
NOT_CONFIGURED = 8

EXIT_CODES: dict[int, str] = {
    OK: "success (for `crontab apply` without `--yes` in a non-interactive run: the plan was printed, nothing changed)",
    ERROR: "any other error, or a confirmation answered no",
    USAGE: "bad command line (unknown option, missing argument)",
    NOT_FOUND: "no such task, job, secret, signing secret or notification subscription (404)",
    CONFLICT: "the resource changed since it was read (412), needs If-Match (428), or conflicts with its state (409)",
    INVALID: "the request or an input file is invalid (400, 413, 415, 422), or a crontab line cannot be converted",
    AUTH: "the token is missing, invalid or expired (401), or does not grant this (403)",
    UNAVAILABLE: "the server could not be reached, or answered 429/5xx after the retries",
    NOT_CONFIGURED: "no API URL or no token: set a profile (`jobsched config set`) or JOBSCHED_URL and JOBSCHED_TOKEN",
}


def exit_code_for(error: JobschedError) -> int:
    if isinstance(error, NotFound):
        return NOT_FOUND
    if isinstance(error, Conflict | PreconditionRequired):
        return CONFLICT
    if isinstance(error, ValidationFailed | IdempotencyKeyReused) or (
        isinstance(error, ApiError) and error.status in (413, 415)
    ):
        return INVALID
    if isinstance(error, Unauthorized | Forbidden):
        return AUTH
    if isinstance(error, TransportError | RateLimited | ServerError):
        return UNAVAILABLE
    return ERROR
