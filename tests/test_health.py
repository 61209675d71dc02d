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
