"""How long each loop takes to start: from its process's spawn to its `event=start` log line.

    DJANGO_SETTINGS_MODULE=tests.settings python -m bench.startup [--rounds 3] [--base CHECKOUT]
        [--output .bench/startup.json]

Each of `run_executor`, `run_scheduler`, `run_reconciler` and `run_archiver` is started
alone (nothing else running), on the database Django points at, `--rounds` times, with
the project's modules compiled (as the image ships them) and without (their bytecode
removed, PYTHONDONTWRITEBYTECODE set: each start compiles them from source, as the image
did before), the two alternating. The CPU seconds the child used until that line are read
from /proc. What a cold start (`python -m bench.system --systems jobsched-cold`) pays
four times at once on the same cores. With `--base CHECKOUT` (another commit's checkout, e.g. a
`git worktree`) it compares that checkout's loops with this one's instead, both compiled, alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .procs import ROOT, cpu_seconds
from .system import compile_bytecode, remove_bytecode

LOOPS = ("run_executor", "run_scheduler", "run_reconciler", "run_archiver")
MODES = ("compiled", "source")


def start_once(
    command: str, *, env: dict[str, str], checkout: Path = ROOT, timeout: float = 60.0
) -> tuple[float, float]:
    """(seconds from spawn to `event=start`, CPU seconds of the child by then); the child is then stopped."""
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, str(checkout / "manage.py"), command],
        env={**env, "PYTHONPATH": str(checkout)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=checkout,
    )
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if "event=start" in line:
                return time.monotonic() - started, cpu_seconds(child.pid)
            if time.monotonic() - started > timeout:
                break
        raise RuntimeError(f"{command} did not log event=start: exit {child.poll()}")
    finally:
        child.terminate()
        child.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", type=Path, default=None, help="compare this checkout's loops with these")
    parser.add_argument("--output", default=str(ROOT / ".bench" / "startup.json"))
    options = parser.parse_args(argv)
    if options.rounds < 1:
        parser.error("--rounds must be positive")
    if options.base is not None and not (options.base / "manage.py").is_file():
        parser.error(f"--base {options.base}: no manage.py there")
    env = {**os.environ, "LOG_LEVEL": "INFO"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    modes = ("base", "this") if options.base is not None else MODES
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {mode: {loop: [] for loop in LOOPS} for mode in modes}
    try:
        if options.base is not None:
            compile_bytecode(options.base)
        for _ in range(options.rounds):
            for mode in modes:
                if mode in ("base", "this"):
                    checkout = options.base if mode == "base" else ROOT
                    compile_bytecode(checkout)
                    for loop in LOOPS:
                        samples[mode][loop].append(start_once(loop, env=env, checkout=checkout))
                    continue
                if mode == "compiled":
                    compile_bytecode(ROOT)
                    run_env = env
                else:
                    remove_bytecode(ROOT)
                    run_env = {**env, "PYTHONDONTWRITEBYTECODE": "1"}
                for loop in LOOPS:
                    samples[mode][loop].append(start_once(loop, env=run_env))
    finally:
        compile_bytecode(ROOT)  # as `make bytecode` leaves the checkout
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "rounds": options.rounds,
        "median": {
            mode: {
                loop: {
                    "seconds": round(statistics.median(wall for wall, _ in runs), 3),
                    "cpu_seconds": round(statistics.median(cpu for _, cpu in runs), 3),
                }
                for loop, runs in by_loop.items()
            }
            for mode, by_loop in samples.items()
        },
        "samples": samples,
    }
    Path(options.output).parent.mkdir(parents=True, exist_ok=True)
    Path(options.output).write_text(json.dumps(result, indent=2) + "\n")
    for loop in LOOPS:
        if options.base is not None:
            base, this = result["median"]["base"][loop], result["median"]["this"][loop]
            print(
                f"{loop:>15}: {this['seconds']:.2f} s ({this['cpu_seconds']:.2f} s CPU),"
                f" base {base['seconds']:.2f} s ({base['cpu_seconds']:.2f} s CPU)",
                flush=True,
            )
            continue
        compiled, source = result["median"]["compiled"][loop], result["median"]["source"][loop]
        print(
            f"{loop:>15}: {compiled['seconds']:.2f} s ({compiled['cpu_seconds']:.2f} s CPU) compiled,"
            f" {source['seconds']:.2f} s ({source['cpu_seconds']:.2f} s CPU) from source",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
