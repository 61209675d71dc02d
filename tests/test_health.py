"""Probes: /healthz never looks at dependencies, /readyz follows the database."""

import pytest
from django.db import connection


def test_healthz_answers_200(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_answers_200_when_the_database_answers(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["database"] == "ok"


@pytest.mark.django_db(transaction=True)
def test_readyz_answers_503_problem_when_the_database_is_unreachable(client):
    connection.close()
    real_port = connection.settings_dict["PORT"]
    connection.settings_dict["PORT"] = 1  # nothing listens on port 1: a real refused connection
    try:
        response = client.get("/readyz")
    finally:
        connection.close()
        connection.settings_dict["PORT"] = real_port
    assert response.status_code == 503
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["status"] == 503


def test_unknown_path_is_a_problem_404(client):
    response = client.get("/no/such/path")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
@pytest.mark.parametrize("host", ["10.244.1.17:8000", "10.244.1.17", "[fd00::17]:8000", "pod.internal"])
def test_probes_answer_whatever_the_host_header(client, path, host):
    response = client.get(path, HTTP_HOST=host)
    assert response.status_code == 200


def test_other_paths_still_refuse_a_host_outside_allowed_hosts(client):
    response = client.get("/v1/tasks", HTTP_HOST="10.244.1.17:8000")
    assert response.status_code == 400


def test_the_api_metrics_are_in_the_prometheus_text_format(client):
    client.get("/v1/tasks")  # a 401, counted like any other answer
    response = client.get("/metrics")
    assert response["Content-Type"].startswith("text/plain")
    assert 'jobsched_api_requests_total{method="GET",route="/v1/tasks",status="401"}' in response.content.decode()
