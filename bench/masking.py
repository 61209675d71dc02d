"""Time the support console's masking (domain.masking) on bodies built against it.

    python -m bench.masking [--sizes 16384,65536] [--before REV] [--before-sizes 4096,16384]

Each adversarial body (`adversarial_bodies`) is masked `--samples` times by the
current code (best and worst ms). With `--before REV`, the masking module as it
was at that git revision is timed too, once per body and only at
`--before-sizes` (the quadratic code takes minutes at 64 KiB); a RecursionError
there is recorded as such. Figures go to stdout and to `<out-dir>/masking.json`.
No database, one core, a few seconds for the current code.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECRET = "c0ffee-5ecret-value"


def adversarial_bodies(size: int) -> dict[str, str]:
    """Bodies of about `size` characters, each aimed at one shape the console's masking met."""
    half = size // 2
    return {
        # A name with no `=`/`:` after it: the name-and-separator search restarted at every character.
        "name characters, no separator": "a" * size,
        # `-` is no word character: the JWT search restarted at every `-eyJ` and ran to the run's end.
        "dash-separated eyJ": "-eyJ" * (size // 4),
        # A URL's path of name characters, masked as text after the URL.
        "a URL with a long path": "http://" + "a" * (size - 7),
        # A JSON string field: every string is masked as free text.
        "a JSON string of name characters": json.dumps({"note": "a" * (size - 12)}),
        # Deep nesting: json.loads, the masking's walk and json.dumps(indent) recurse.
        "nested arrays": "[" * half + "]" * half,
        "nested objects": '{"a":' * ((size - 1) // 6) + "1" + "}" * ((size - 1) // 6),
    }


def _module_at(revision: str):
    """The masking module as it was at `revision` (domain/masking.py, console/masking.py before the audit trail)."""
    for path in ("domain/masking.py", "console/masking.py"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:{path}"], check=False, capture_output=True, text=True
        )
        if shown.returncode == 0:
            source = shown.stdout
            break
    else:
        raise SystemExit(f"no masking module at {revision}")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("masking_before", file.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(file.name)
    return module


def _timed(mask: Callable[[str], str], body: str, samples: int) -> dict:
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        try:
            mask(body)
        except RecursionError:
            return {"error": "RecursionError"}
        timings.append((time.perf_counter() - started) * 1000)
    return {"best_ms": round(min(timings), 2), "worst_ms": round(max(timings), 2), "samples": samples}


def _sizes(text: str) -> list[int]:
    return [int(value) for value in text.split(",") if value]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.masking", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=_sizes, default=[16 * 1024, 64 * 1024], help="body sizes, characters")
    parser.add_argument("--samples", type=int, default=5, help="timed runs per body (current code)")
    parser.add_argument("--before", metavar="REV", help="also time the masking module at this git revision")
    parser.add_argument("--before-sizes", type=_sizes, default=[4 * 1024, 16 * 1024])
    parser.add_argument("--out-dir", default=str(ROOT / "docs" / "bench"))
    options = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from domain import masking

    report: dict = {
        "machine": {"cores": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2)},
        "python": sys.version.split()[0],
        "body_limit": masking.BODY_LIMIT,
        "after": {},
    }
    for size in options.sizes:
        for name, body in adversarial_bodies(size).items():
            figures = _timed(masking.mask_body, body, options.samples)
            report["after"].setdefault(str(size), {})[name] = figures
            print(f"[masking] after  {size:>6} {name}: {json.dumps(figures)}", flush=True)
    if options.before:
        before = _module_at(options.before)
        report["before"] = {"revision": options.before}
        for size in options.before_sizes:
            for name, body in adversarial_bodies(size).items():
                figures = _timed(before.mask_body, body, 1)
                report["before"].setdefault(str(size), {})[name] = figures
                print(f"[masking] before {size:>6} {name}: {json.dumps(figures)}", flush=True)
    report["finished_at"] = datetime.now(UTC).isoformat()
    out = Path(options.out_dir) / "masking.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
