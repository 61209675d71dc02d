"""Every label the API's request metrics take from a request comes from a fixed set."""

from __future__ import annotations

import random
import string

import pytest
from prometheus_client import REGISTRY

from api.access_log import KNOWN_METHODS, OTHER

FLOOD = 600


def _series(name: str) -> set[tuple[tuple[str, str], ...]]:
    return {
        tuple(sorted(sample.labels.items()))
        for metric in REGISTRY.collect()
        if metric.name == name
        for sample in metric.samples
        if sample.name == f"{name}_total" or sample.name == f"{name}_count"
    }


@pytest.mark.django_db
def test_a_flood_of_random_methods_hosts_and_paths_adds_a_bounded_number_of_series(client):
    """Unauthenticated, random methods, bad Hosts and paths: the series count must not follow the flood."""
    before = _series("jobsched_api_requests") | _series("jobsched_api_request_duration_seconds")
    rng = random.Random(7)
    for i in range(FLOOD):
        method = "".join(rng.choices(string.ascii_uppercase, k=8))
        host = f"evil-{i}.example" if i % 3 == 0 else "testserver"
        path = f"/v1/{rng.randrange(10**9)}" if i % 2 else "/v1/tasks"
        response = client.generic(method, path, HTTP_HOST=host)
        assert response.status_code in {400, 401, 404, 405, 429}, response.status_code
    after = _series("jobsched_api_requests") | _series("jobsched_api_request_duration_seconds")
    added = after - before
    assert len(added) <= 16, sorted(added)[:20]
    methods = {dict(labels)["method"] for labels in after}
    assert methods <= set(KNOWN_METHODS) | {OTHER}, methods
    assert OTHER in methods


@pytest.mark.django_db
def test_known_methods_keep_their_own_label(tenant_client):
    tenant_client("tenant-a").get("/v1/tasks")
    labels = _series("jobsched_api_requests")
    assert any(dict(series)["method"] == "GET" and dict(series)["route"] == "/v1/tasks" for series in labels)
