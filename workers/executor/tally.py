"""What the executor did in a window: counters its parts add to, and the lateness of its calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_LATENESS_SAMPLES = 100_000
COUNTERS = ("claimed", "fired", "succeeded", "retried", "dead", "dropped", "released", "warmed")


@dataclass
class Tally:
    claimed: int = 0
    fired: int = 0
    succeeded: int = 0
    retried: int = 0
    dead: int = 0
    dropped: int = 0
    released: int = 0  # claims given back, never called (release_claims)
    warmed: int = 0  # connections held open ahead of a parked group's second (DeliveryClient.warm)
    lateness: list[float] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.lateness.extend(other.lateness)
        del self.lateness[:-MAX_LATENESS_SAMPLES]  # a long-running process keeps the recent ones

    def take(self) -> Tally:
        """This window's counts, and a fresh window in their place (the parts keep this object)."""
        window = Tally(**{name: getattr(self, name) for name in COUNTERS}, lateness=self.lateness)
        for name in COUNTERS:
            setattr(self, name, 0)
        self.lateness = []
        return window

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in COUNTERS}
        if self.lateness:
            ordered = sorted(self.lateness)
            middle = len(ordered) // 2  # the median of the list sorted once (statistics.median sorts again)
            p50 = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
            out["lateness_p50"] = round(p50, 3)
            out["lateness_p95"] = round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3)
            out["lateness_max"] = round(ordered[-1], 3)
        return out
