"""Pacing, pure: may a job call its origin at its time, or when should it come back.

A rate limit is a generic cell rate algorithm (GCRA, the token bucket written as one
time): `tat`, the theoretical arrival time, moves on by 1/per_second with every call
granted, and a call wanted at time t is granted when t >= tat - (burst - 1)/per_second.
Whatever order the claims meet the jobs in, the calls granted for times within any
window of w seconds number at most burst + per_second * w (each grant moves tat on by
1/per_second, and a grant needs its time no earlier than tat minus the burst's tolerance).
A Retry-After from the origin (`blocked_until`) grants nothing before it, limit or not.

Times are seconds since the epoch on the database's clock. A job held back is told
when to come back: the first time a token is free, or 1/per_second after the last
job held back before it (`held_until`, kept on the bucket across claims), so a burst
held back comes due one by one in order, each job moved once, not all at once again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Bucket:
    """One (tenant, origin)'s state, as locked by the claim, changed by `admit`."""

    per_second: float | None  # None: no limit configured, only a Retry-After block
    burst: int
    tat: float | None  # None: never used (a full bucket)
    blocked_until: float | None
    granted: int = 0  # every call ever granted (a figure for operators and the tests' bound)
    first_granted_for: float | None = None
    last_granted_for: float | None = None
    held_until: float | None = None  # the latest time a held-back job was told to come back
    changed: bool = False

    def admit(self, wanted_at: float) -> float | None:
        """Grant a call at `wanted_at` (None), or the time the job should come back."""
        blocked = self.blocked_until
        if self.per_second is None:
            if blocked is not None and wanted_at < blocked:
                return blocked
            return None
        interval = 1.0 / self.per_second
        tolerance = (self.burst - 1) * interval
        earliest = -float("inf") if self.tat is None else self.tat - tolerance
        if blocked is not None:
            earliest = max(earliest, blocked)
        if wanted_at < earliest:
            # Behind the jobs held back before (by any claim): each held job is told a time of its own.
            queued = self.held_until
            back = earliest if queued is None or queued < earliest else queued + interval
            self.held_until = back
            self.changed = True
            return back
        self.tat = max(wanted_at, self.tat if self.tat is not None else wanted_at) + interval
        self.granted += 1
        self.first_granted_for = wanted_at if self.first_granted_for is None else min(self.first_granted_for, wanted_at)
        self.last_granted_for = wanted_at if self.last_granted_for is None else max(self.last_granted_for, wanted_at)
        self.changed = True
        return None
