"""Typed errors: every problem+json answer (RFC 9457) becomes one of these.

Branch on the class (or `slug`), never on `detail`, which is for people.
The classes follow the status; `slug` is the problem type's last segment
(docs/problems.md in the jobsched repository lists them).
"""

from __future__ import annotations

from typing import Any

import httpx

from jobsched_client.retry import retry_after_seconds

PROBLEM_TYPE_BASE = "https://jobsched.dev/problems/"


class JobschedError(Exception):
    """Base of every error the SDK raises."""


class TransportError(JobschedError):
    """The server could not be reached (connection refused, DNS, timeout)."""


class Unsupported(JobschedError):
    """The server is older than this call needs (e.g. a label selector on a server without labels)."""


class ApiError(JobschedError):
    """The API answered with an error status."""

    def __init__(self, response: httpx.Response, problem: dict[str, Any]):
        self.response = response
        self.status: int = response.status_code
        self.problem = problem
        problem_type = str(problem.get("type") or "")
        self.slug: str = problem_type.removeprefix(PROBLEM_TYPE_BASE) if problem_type else ""
        self.title: str = str(problem.get("title") or response.reason_phrase)
        self.detail: str = str(problem.get("detail") or "")
        raw_errors = problem.get("errors")
        self.errors: dict[str, list[str]] = raw_errors if isinstance(raw_errors, dict) else {}
        super().__init__(self._message())

    @property
    def field(self) -> str | None:
        """The first offending field, parameter or header ("schedule.cron", "http.url"), if any."""
        return next(iter(self.errors), None)

    def _message(self) -> str:
        head = f"{self.status} {self.slug or self.title}"
        if self.errors:
            return head + ": " + "; ".join(f"{name}: {', '.join(map(str, why))}" for name, why in self.errors.items())
        return f"{head}: {self.detail}" if self.detail else head


class ValidationFailed(ApiError):
    """400: a field, parameter or header is invalid; `errors` maps each name to its reasons."""


class Unauthorized(ApiError):
    """401: no valid bearer token."""


class Forbidden(ApiError):
    """403: the token does not grant this."""


class NotFound(ApiError):
    """404: no such resource for this tenant."""


class Conflict(ApiError):
    """409: the request conflicts with the resource's state (`slug` says which, e.g. task-paused)."""


class PreconditionFailed(Conflict):
    """412: the resource changed since it was read; `current_etag` is the version now. GET it again."""

    @property
    def current_etag(self) -> str | None:
        value = self.problem.get("current_etag")
        return str(value) if value is not None else None


class PreconditionRequired(ApiError):
    """428: the edit needs If-Match with the ETag read."""


class IdempotencyKeyReused(ApiError):
    """422: this Idempotency-Key was used before with another body."""


class RateLimited(ApiError):
    """429 after the SDK's retries ran out; `retry_after` is the server's last hint in seconds."""

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.response.headers.get("Retry-After"))


class ServerError(ApiError):
    """5xx: a fault or outage on the server's side."""


class Unavailable(ServerError):
    """503 after the SDK's retries ran out (e.g. history-unavailable)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: ValidationFailed,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    422: IdempotencyKeyReused,
    428: PreconditionRequired,
    429: RateLimited,
    503: Unavailable,
}


def error_for(response: httpx.Response) -> ApiError:
    """The typed error for an error response (its body read as problem+json when it is JSON)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    problem = body if isinstance(body, dict) else {"detail": response.text[:200]}
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else ApiError
    return cls(response, problem)
