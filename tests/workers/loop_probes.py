"""What a running loop serves on --metrics-port, read as a kubelet and Prometheus read it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a loop's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def health(port: int) -> tuple[int, dict]:
    """(status, JSON body) of a loop's /healthz; a 503 is an answer too."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def value(port: int, name: str, **labels: str) -> float:
    """One sample of a loop's /metrics; 0 while the loop does not answer yet."""
    try:
        return scrape(port).get((name, tuple(sorted(labels.items()))), 0.0)
    except OSError:
        return 0.0
