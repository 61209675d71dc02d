"""The two pictures of `make bench` (matplotlib, no display): calls per 100 ms, lateness CDF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .figures import bins_per_100ms

COLOURS = {"jobsched": "tab:blue", "jobsched-cold": "tab:purple", "celery": "tab:red"}
# Issue #33's last-call targets, drawn as dashed lines in their system's colour.
LAST_CALL_TARGETS = {"jobsched": 4.0, "jobsched-cold": 6.0}


def _style(name: str) -> dict[str, Any]:
    """A system's colour; a base checkout's run (`<system> (base)`) in the same colour, dotted and lighter."""
    system, base = name.removesuffix(" (base)"), name.endswith(" (base)")
    return {"color": COLOURS.get(system), "linestyle": ":" if base else "-", "alpha": 0.6 if base else 1.0}


def draw(lateness_by_system: dict[str, list[float]], *, out_dir: Path, title: str) -> list[Path]:
    """Write system-fired-per-100ms.png and system-lateness-cdf.png; their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        paths.append(out_dir / name)
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), width_ratios=[1, 2])
    fastest = min((max(v) for v in lateness_by_system.values() if v), default=1.0)
    for axis, right in zip(axes, (fastest + 1.0, None), strict=True):
        for name, lateness in lateness_by_system.items():
            starts, counts = bins_per_100ms(lateness)
            axis.step(starts, counts, where="post", label=name, **_style(name))
        axis.axvline(0, color="grey", linewidth=0.8, linestyle=":")
        for system, target in LAST_CALL_TARGETS.items():
            if system in lateness_by_system:
                axis.axvline(target, color=COLOURS[system], linewidth=0.8, linestyle="--")
        axis.set_xlabel("seconds after the second the calls were due")
        axis.set_ylabel("calls fired per 100 ms")
        if right is not None:
            axis.set_xlim(-0.5, right)
            axis.set_title("the first seconds")
        else:
            axis.set_title("the whole burst")
        axis.legend()
    fig.suptitle(title)
    save(fig, "system-fired-per-100ms.png")

    fig, axis = plt.subplots(figsize=(8, 4.5))
    for name, lateness in lateness_by_system.items():
        ordered = sorted(lateness)
        if ordered:
            fractions = [(n + 1) / len(ordered) for n in range(len(ordered))]
            axis.plot(ordered, fractions, label=name, **_style(name))
    axis.set_xscale("symlog", linthresh=0.1)
    axis.set_xlabel("lateness: arrival at the receiver - the due second (s, linear below 0.1)")
    axis.set_ylabel("fraction of calls fired")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    axis.set_title(title)
    save(fig, "system-lateness-cdf.png")
    return paths
