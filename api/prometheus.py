"""Prometheus metrics of the API process, and the one exposition every process serves.

Under gunicorn each worker process counts on its own; with PROMETHEUS_MULTIPROC_DIR set
(gunicorn.conf.py sets it) prometheus_client writes the counts to files there and the
scrape adds them up across workers, so one scrape of a pod sees the whole pod.
"""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

# Labels are bounded: `route` is the URL pattern (never the path with its ids), `status` a code.
API_REQUESTS = Counter(
    "jobsched_api_requests_total",
    "API requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
)
API_LATENCY = Histogram(
    "jobsched_api_request_duration_seconds",
    "Time from the request reaching Django to the response, by route pattern.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


def exposition(registry: CollectorRegistry | None = None) -> tuple[bytes, str]:
    """The text format of every metric of this process (or pod, in multiprocess mode)."""
    if registry is None and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    return generate_latest(registry or REGISTRY), CONTENT_TYPE_LATEST
