"""The benches' figures: from the receiver's record of arrivals, or from timed calls, to numbers."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

STALL_TAIL = 500  # issue #33 goal 3: no stall until the last 500 calls
Arrival = tuple[float, str, str, str]  # (time.time() on arrival, idempotency key, scheduled at, bench task)


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of a sorted list."""
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def rank_percentile(ordered: list[float], fraction: float) -> float:
    """The sample at index `fraction` x n of a sorted list (the last one at most)."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def timed_ms(run: Callable[[], object], samples: int) -> list[float]:
    """Milliseconds each of `samples` calls of `run` took, in call order."""
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        run()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def fire_figures(arrivals: list[Arrival], *, due: float, tasks: int) -> dict[str, Any]:
    """When the calls arrived relative to their second, and whether each task was called exactly once."""
    lateness = sorted(at - due for at, _, _, _ in arrivals)
    per_task = Counter(task for _, _, _, task in arrivals)
    keys = Counter(key for _, key, _, _ in arrivals)
    expected = {str(n) for n in range(tasks)}
    figures: dict[str, Any] = {
        "calls": len(arrivals),
        "lost": len(expected - set(per_task)),
        "duplicated": sum(count - 1 for count in per_task.values() if count > 1),
        "duplicate_keys": sum(count - 1 for count in keys.values() if count > 1),
        "unexpected": sum(count for task, count in per_task.items() if task not in expected),
    }
    if lateness:
        figures["fire_seconds"] = {
            "first": round(lateness[0], 4),
            "p50": round(percentile(lateness, 0.50), 4),
            "p95": round(percentile(lateness, 0.95), 4),
            "p99": round(percentile(lateness, 0.99), 4),
            "last": round(lateness[-1], 4),
        }
        # From the second to the last call: the rate a tenant sees for a burst due at once.
        figures["jobs_per_second"] = round(len(lateness) / lateness[-1], 1) if lateness[-1] > 0 else None
        figures["stalls"] = stall_figures(lateness)
    return figures


def stall_figures(lateness: list[float], *, tail: int = STALL_TAIL) -> dict[str, Any]:
    """The longest time without a call while due jobs waited: from the due second (0) through
    the sorted arrivals up to the one `tail` calls before the last (every job is due from the
    second on, so until then some wait); and the 100 ms windows with no call in that stretch."""
    upto = lateness[: max(1, len(lateness) - tail)]
    points = [0.0, *(value for value in upto if value > 0)]
    gaps = [(later - earlier, earlier) for earlier, later in itertools.pairwise(points)]
    longest, at = max(gaps, default=(0.0, 0.0))
    _, counts = bins_per_100ms([value for value in upto if value >= 0])
    return {
        "until_seconds": round(upto[-1], 4),
        "longest_gap_seconds": round(longest, 4),
        "longest_gap_after_seconds": round(at, 4),
        "gaps_over_100ms": sum(1 for gap, _ in gaps if gap > 0.1),
        "empty_100ms_bins": sum(1 for count in counts if count == 0),
    }


def cpu_figures(cpu: dict[str, float], *, jobs: int) -> dict[str, Any]:
    """CPU seconds of each process over the run, and milliseconds of it per job."""
    return {
        "cpu_seconds": {name: round(seconds, 3) for name, seconds in cpu.items()},
        "cpu_ms_per_job": {name: round(1000 * seconds / max(1, jobs), 4) for name, seconds in cpu.items()},
    }


def bins_per_100ms(lateness: list[float]) -> tuple[list[float], list[int]]:
    """Calls fired in each 100 ms from the first to the last (bin starts, counts)."""
    if not lateness:
        return [], []
    start = int(min(lateness) // 0.1)
    end = int(max(lateness) // 0.1)
    counts = [0] * (end - start + 1)
    for value in lateness:
        counts[int(value // 0.1) - start] += 1
    return [round((start + n) * 0.1, 1) for n in range(len(counts))], counts
